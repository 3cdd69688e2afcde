#!/bin/bash
cd $TMPDIR/diag
run() { name=$1; shift; PYTHONPATH=$TMPDIR/diag_snap .venv/bin/python -u drive.py --name $name "$@" 2>&1 | grep --line-buffered -E "^\[|FINAL|Error|error" > $name.log; }
R="--init-ls 3 --fix-ls-steps 1000 --dec-bias -3.56"
run rel_db_s1 --seed 1 $R
run rel_db_m20_s0 --model svgpvae:20 $R
run rel_db_m30_s0 --model svgpvae:30 $R
run init3_db_s0 --init-ls 3 --dec-bias -3.56
run fixls2rel_db_s0 --init-ls 2 --fix-ls-steps 1000 --dec-bias -3.56
run fixls3rel_s0 --init-ls 3 --fix-ls-steps 1000
run rel_db_m20_s1 --seed 1 --model svgpvae:20 $R
