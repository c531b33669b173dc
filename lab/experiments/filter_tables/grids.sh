# The filter tables' grids (GRID names of sweeps.sh), sourced by language.sh and wikiauto.sh:
# GRIDS every one-score grid but cost (its bounds depend on the file's costs), RANGES the
# lower x upper grids of overlap_1 and BLEU.
GRIDS=(random length overlap overlap,bleu lm_ppl ref_prob)
RANGES=(overlap,overlap_1,ranges overlap,bleu,ranges)
