#!/bin/bash
# Run from a folder holding this script (as run.sh), measure_fa3_binary.py, flash_attn_interface.py, lab/harness.py,
# lab/kernels/measure_production_attention.py and the gzipped library (.dev/s15fa3 on the lent H100, 2026-11-27).
# One call: the library built by s12fa3's first call (fa3_C.abi3.so.gz, build_fa3_binary.py: flash-attention hopper/ @
# 0251105a, CUTLASS @ 71275920), then blind grid 3 (measure_fa3_binary.py v4 --grid blind3) and a repeat of every 5th shape.
export PYTHONUNBUFFERED=1
D=$(cd "$(dirname "$0")" && pwd)
P=/tmp/fa3pkg; mkdir -p $P/flash_attn_3
gunzip -c $D/fa3_C.abi3.so.gz > $P/flash_attn_3/_C.abi3.so
echo '__version__ = "3.0.0+0251105a.trim"' > $P/flash_attn_3/__init__.py
cp $D/flash_attn_interface.py $P/
python3 -c "
f = ['BACKWARD','SPLIT','PAGEDKV','APPENDKV','LOCAL','SOFTCAP','PACKGQA','FP16','FP8','VARLEN','CLUSTER','HDIM64','HDIM96','HDIM128','HDIM192','HDIM256','SM8x']
dis = {'BACKWARD','SOFTCAP','LOCAL','FP16','CLUSTER','HDIM64','HDIM96','HDIM192','HDIM256','SM8x','APPENDKV'}
c = {f'FLASHATTENTION_DISABLE_{k}': k in dis for k in f}
open('$P/flash_attn_config.py','w').write('CONFIG = ' + repr({'build_flags': c}) + chr(10))"
nvidia-smi > $OUT/nvidia-smi.txt 2>&1
cd $D
python3 measure_fa3_binary.py --pkg $P --out $OUT --grid blind3 --budget-s 150 > /tmp/stdout_blind3.txt 2>&1
tail -4 /tmp/stdout_blind3.txt
mkdir -p $OUT/rep
python3 measure_fa3_binary.py --pkg $P --out $OUT/rep --grid blind3 --budget-s 60 --stride 5 > /tmp/rep_stdout.txt 2>&1; rm -f $OUT/rep/log.txt
tail -2 /tmp/rep_stdout.txt; ls -R $OUT
