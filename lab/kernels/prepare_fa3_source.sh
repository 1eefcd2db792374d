#!/bin/bash
# Make the trimmed FlashAttention-3 source tree that build_fa3_binary.py compiles (29 MiB; never committed):
#   DEST/src/hopper   flash-attention hopper/*.h|hpp|cu|cpp + flash_attn_interface.py + flash_attn_3/ @ FA3_COMMIT,
#                     and only the 10 forward instantiations hdim128 x {bf16, e4m3} x {"", packgqa, split, paged,
#                     paged_split} (hopper/setup.py's source rule with softcap / fp16 / other head dims disabled)
#   DEST/src/cutlass  NVIDIA/cutlass include/ and tools/util/include/ at the submodule commit flash-attention pins
#   SET=mla_decode: the 5 bf16 hdim 64 x 512 forward instantiations instead ({"", packgqa, split, paged, paged_split}:
#                     MLA's absorbed decode with qv, as SGLang runs DSA over a bf16 cache; build_fa3_binary.py --mla-decode)
# usage: [SET=mla_decode] prepare_fa3_source.sh FLASH_ATTENTION_GIT_DIR CUTLASS_GIT_DIR DEST
set -e
FA=$1; CU=$2; D=$3
FA3_COMMIT=0251105a2fb19d2957484b7f023cd8c115286ced
CUTLASS_COMMIT=$(git -C "$FA" ls-tree $FA3_COMMIT csrc/cutlass | awk '{print $3}')   # 7127592069c2...
mkdir -p "$D/src/hopper/instantiations" "$D/src/hopper/flash_attn_3" "$D/src/cutlass"
for f in $(git -C "$FA" ls-tree --name-only $FA3_COMMIT hopper/ | grep -E '\.(h|hpp|cu|cpp)$') \
         hopper/flash_attn_interface.py $(git -C "$FA" ls-tree --name-only $FA3_COMMIT hopper/flash_attn_3/); do
  git -C "$FA" show $FA3_COMMIT:$f > "$D/src/$f"
done
if [ "$SET" = mla_decode ]; then
  for v in "" _packgqa _split _paged _paged_split; do
    f=hopper/instantiations/flash_fwd_hdim64_512_bf16${v}_sm90.cu; git -C "$FA" show $FA3_COMMIT:$f > "$D/src/$f"
  done
else
  for dt in bf16 e4m3; do for v in "" _packgqa _split _paged _paged_split; do
    f=hopper/instantiations/flash_fwd_hdim128_${dt}${v}_sm90.cu; git -C "$FA" show $FA3_COMMIT:$f > "$D/src/$f"
  done; done
fi
git -C "$CU" archive "$CUTLASS_COMMIT" include tools/util/include | tar -x -C "$D/src/cutlass"
du -sh "$D/src"
