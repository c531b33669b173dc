"""paraflax from Python: the functions the command line calls, for scripts
and notebooks (model.py, mining.py, data.py, results.py; inputs.py checks
what they are given).

    import paraflax
    model = paraflax.load("runs/bi_de_en")       # whatever its recipe
    x = model.embed(["Guten Morgen."], lang="de")  # [1, d] float32
    y = model.embed(["Good morning."], lang="en")
    pairs = paraflax.mine(x, y, k=1)              # (src, tgt, score)

Every public name of these modules is re-exported by `paraflax` (in
`paraflax.__all__`) and imported only when first used, so `import paraflax`
loads neither TensorFlow nor jax. Errors are `paraflax.ConfigError` (a
setting or a model that cannot do what was asked), `paraflax.DataError` (an
input that cannot be used) and `paraflax.NoCheckpointError` (a workdir with
nothing to restore).

Inputs are checked as the command line checks a file's lines: sentences
come as a list (or any iterable) of str, one sentence each, never a str
alone (that would be read as its characters: pass ["a sentence"]); an
empty list is an error, as an empty input file is (there is nothing to
embed, translate or score); an item that is not a str is an error naming
its index and type; `embed` and `score_pairs` refuse empty (blank)
sentences as `paraflax embed` and `paraflax score-pairs` refuse empty
lines, naming the index, while `translate` gives one "" as `paraflax
translate` leaves an empty line empty. `mine` refuses a threshold that is
NaN or infinite as `paraflax mine --threshold` does.
"""
from paraflax import quiet

# Every module here loads jax when it is first used; on a CPU host with the
# `tpu` extra, jax left to probe would start libtpu, whose init errors would
# land in the user's notebook. The command line makes the same choice.
quiet.keep_jax_off_libtpu()
