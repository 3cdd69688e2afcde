#!/bin/bash
cd $TMPDIR/diag
while kill -0 $(cat queue1.pid) 2>/dev/null; do sleep 5; done
run() { name=$1; shift; PYTHONPATH=$TMPDIR/diag_snap .venv/bin/python drive.py --name $name "$@" 2>&1 | grep -E "^\[|FINAL|Error|error" > $name.log; }
run fixls3_s0 --init-ls 3 --fix-ls-steps 1500
