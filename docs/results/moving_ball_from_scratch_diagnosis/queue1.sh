#!/bin/bash
# sequential queue: one training process at a time
cd $TMPDIR/diag
run() { name=$1; shift; PYTHONPATH=$TMPDIR/diag_snap .venv/bin/python drive.py --name $name "$@" 2>&1 | grep -E "^\[|FINAL|Error|error" > $name.log; }
run floor05_s0 --floor 0.5 --floor-hold 600 --floor-decay 400
run exphead_s0 --head exp
run anneal500_s0 --anneal 500 --beta0 0
run decbias_s0 --dec-bias -3.5
