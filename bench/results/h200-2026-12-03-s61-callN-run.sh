cd .probe-me/s61 && nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv && python3 mixN.py 2>&1 | tee $OUT/mixN.txt
