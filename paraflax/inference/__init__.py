"""Using trained workdirs: translate and back-translate, embed and mine,
score, evaluate, sweep and eval-filtering. A workdir's model is loaded
with its parameters alone (`training.checkpointing.restore_params_only`),
building no optimizer and no training recipe; the families that train
are in `paraflax.recipes`, the beam search and its `Translator` in
`paraflax.decoding`."""
