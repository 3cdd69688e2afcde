#!/bin/bash
cd $TMPDIR/diag
run() { name=$1; shift; PYTHONPATH=$TMPDIR/diag_snap .venv/bin/python -u drive.py --name $name "$@" 2>&1 | grep --line-buffered -E "^\[|FINAL|Error|error" > $name.log; }
run fixls3_db_s0 --init-ls 3 --fix-ls-steps 1500 --dec-bias -3.56
run fixls3rel1000_db_s0 --init-ls 3 --fix-ls-steps 1000 --dec-bias -3.56
