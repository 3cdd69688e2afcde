#!/bin/bash
cd $TMPDIR/diag
while kill -0 $(cat queue4.pid) 2>/dev/null; do sleep 5; done
run() { name=$1; shift; PYTHONPATH=$TMPDIR/diag_snap .venv/bin/python -u drive.py --name $name "$@" 2>&1 | grep --line-buffered -E "^\[|FINAL|Error|error" > $name.log; }
run varinit001_s0 --var-init 0.01
run ns4_s0 --num-samples 4
run lslr1e3_init3_db_s0 --init-ls 3 --ls-lr 1e-3 --dec-bias -3.56
