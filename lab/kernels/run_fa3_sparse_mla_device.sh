#!/bin/bash
# FA3'S MLA-ABSORBED DECODE OVER TOP-K PAGES (SGLang's DSA decode over a bf16 cache on Hopper), on the lent H200: build
# FlashAttention-3's hopper/ forward at 0251105a with only its bf16 hdim 64 x 512 instantiations (build_fa3_binary.py
# --mla-decode; the trimmed source W/fa3mla_src.tar.xz, never committed, made by `SET=mla_decode
# lab/kernels/prepare_fa3_source.sh FLASH_ATTENTION_GIT CUTLASS_GIT DEST` and `tar -cJf` of DEST/src; its md5 in
# env.txt), return the library gzipped, then measure the prediction's shapes (measure_fa3_sparse_mla.py, with --spans)
# and at once again (TAG_replicate) on the warm machine. A prebuilt library (W/fa3mla_C.abi3.so.xz, or .gz as earlier runs returned it) skips the build; a build returns it
# xz-compressed (0.6 MB against gzip's 1.4 MB: the travelling tree's limit).
# LIB=fa3gqa BUILD=" " with W holding fa3gqa_src.tar.xz (prepare_fa3_source.sh's default set: hdim 128, bf16 + e4m3)
# builds FA3's hdim 128 forward instead (the GQA call grid: EXTRA="--dense --gqa").
# From the repository root of the device copy:
#   W=.dev/fa3mla P=hwmodels/calibration/data/production_kernels/<prediction>.csv TAG=grid1 [EXTRA=--dense] bash lab/kernels/run_fa3_sparse_mla_device.sh
T0=$(date +%s)
W=$(realpath ${W:-.dev/fa3mla}); TAG=${TAG:-grid1}; LIB=${LIB:-fa3mla}; BUILD=${BUILD:---mla-decode}
PKG=/tmp/${LIB}pkg; O=/tmp/ofa3
mkdir -p $O
export PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nvcc --version | tail -2; nproc; python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
  md5sum lab/kernels/measure_fa3_sparse_mla.py lab/kernels/build_fa3_binary.py lab/kernels/_timing.py lab/harness.py $W/* $P
  cat $0; } > $O/${TAG}_env.txt 2>&1
if [ -f $PKG/flash_attn_3/_C.abi3.so ]; then echo "library already built"
elif [ -f $W/${LIB}_C.abi3.so.xz ] || [ -f $W/${LIB}_C.abi3.so.gz ]; then
  mkdir -p $PKG/flash_attn_3
  if [ -f $W/${LIB}_C.abi3.so.xz ]; then xz -dc $W/${LIB}_C.abi3.so.xz > $PKG/flash_attn_3/_C.abi3.so
  else gunzip -c $W/${LIB}_C.abi3.so.gz > $PKG/flash_attn_3/_C.abi3.so; fi
  cp $W/flash_attn_interface.py $W/flash_attn_config.py $PKG/; echo '__version__ = "3.0.0+0251105a.trim"' > $PKG/flash_attn_3/__init__.py
else
  rm -rf /tmp/fa3b && mkdir -p /tmp/fa3b && tar -xJf $W/${LIB}_src.tar.xz -C /tmp/fa3b
  python3 lab/kernels/build_fa3_binary.py /tmp/fa3b/src $PKG --jobs 16 $BUILD > $O/build.log 2>&1; rc=$?
  grep -v "ptxas\|bytes stack frame\|Used [0-9]* registers\|Compiling entry\|Function properties" $O/build.log | tail -20
  grep -v "ptxas\|bytes stack frame\|Used [0-9]* registers\|Compiling entry\|Function properties" $O/build.log > $O/${TAG}_build.txt
  echo "build rc $rc after $(( $(date +%s) - T0 )) s"; [ $rc -ne 0 ] && { cp $O/build.log $OUT/; exit 2; }
  xz -9e -c $PKG/flash_attn_3/_C.abi3.so > $OUT/${LIB}_C.abi3.so.xz; cp $PKG/flash_attn_interface.py $PKG/flash_attn_config.py $OUT/
  ls -la $OUT/
fi
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $O/${TAG}_clocks.csv 2>/dev/null &
SMI=$!
python3 lab/kernels/measure_fa3_sparse_mla.py --pkg $PKG --out $O --shapes $P --tag $TAG --spans $EXTRA > $O/${TAG}_log.txt 2>&1
echo "first run rc $? at $(( $(date +%s) - T0 )) s"; tail -4 $O/${TAG}_log.txt
python3 lab/kernels/measure_fa3_sparse_mla.py --pkg $PKG --out $O --shapes $P --tag ${TAG}_replicate $EXTRA > $O/${TAG}_replicate_log.txt 2>&1
echo "replicate rc $? at $(( $(date +%s) - T0 )) s"; tail -3 $O/${TAG}_replicate_log.txt
kill $SMI 2>/dev/null
gzip -n -9 $O/*_clocks.csv
tar -czf $OUT/fa3_sparse_mla_$TAG.tgz -C $O .
rm -rf $O
