"""n-gram language models of the paraphrase filters (the paper's `lm_ppl`).

`train_lm` estimates a modified Kneser-Ney LM with KenLM's `lmplz` (the
paper's tool), which `launch/build_kenlm.sh` builds into the venv; the
`kenlm` module, which can only query, scores with it. Both sides see the
same text: the paraphrase models' lowercased word tokens
(`data.words.tokenize`) joined by single spaces, so the LM's vocabulary is
the encoders'. `tokenize` never yields `<s>`, `</s>` or `<unk>` whole (it
splits `<` and `>` off), so no input collides with KenLM's symbols.

LMs that are compared with each other (Moore-Lewis selection) share a closed
vocabulary: the words of `vocabulary(text)`, every other token read as
`OOV`, a word the LM learns like any other (Moore & Lewis 2010), so their
perplexities count the same events. Such an LM is estimated with lmplz's
`--vocab_pad` at the closed vocabulary's size (its words, OOV and </s>),
so that its <unk> probability is that of each vocabulary word it never saw
(one share of the interpolated uniform distribution; without the pad <unk>
is one event that stands for all of them), and its probabilities over the
closed vocabulary sum to one. `vocab_pad=False` estimates it without the
pad (the ablation of `paraflax eval-domain --config.eval_vocab_pad=False`).
"""
from __future__ import annotations

import collections
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator

from paraflax import errors
from paraflax import faults
from paraflax import files
from paraflax.data import readers
from paraflax.data import words
from paraflax.filtering import scores

FORMATS = ("binary", "arpa")  # choices.LM_FORMATS
TOOLS = ("lmplz", "build_binary")
_BUILD = ("Build KenLM's tools into the venv: launch/build_kenlm.sh (the "
          "README's set-up commands run it).")
_STDERR_SHOWN = 1500  # characters of a failed tool's stderr in the message


OOV = "<oov>"  # tokenize never yields it: it splits < and > off


def sentence(text: str, vocabulary: frozenset[str] | None = None) -> str:
  """What the LM is trained and queried on: tokens outside `vocabulary`
  (if given) read as `OOV`."""
  tokens = words.tokenize(text)
  if vocabulary is not None:
    tokens = [t if t in vocabulary else OOV for t in tokens]
  return " ".join(tokens)


def vocabulary(path: str, min_count: int) -> frozenset[str]:
  """The tokens seen at least `min_count` times in a text (its lines
  streamed)."""
  counts = collections.Counter(
      t for line in readers.iter_lines(path) for t in words.tokenize(line))
  return frozenset(t for t, n in counts.items() if n >= min_count)


def tool(name: str) -> str:
  """A KenLM program: beside this Python (the venv's bin, where
  launch/build_kenlm.sh puts it), else on PATH."""
  beside = os.path.join(os.path.dirname(sys.executable), name)
  found = beside if os.access(beside, os.X_OK) else shutil.which(name)
  if not found:
    raise errors.ConfigError(f"KenLM's `{name}` was not found beside "
                             f"{sys.executable} nor on PATH. {_BUILD}")
  return found


def sha256(path: str) -> str:
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
      digest.update(chunk)
  return digest.hexdigest()


def _run(command: list[str], *, stdin: Iterator[str] | None = None,
         stdout: int | None = None, fix: str = "") -> None:
  """Runs a KenLM tool, feeding it `stdin` line by line through a pipe
  (no tokenized copy of the corpus on disk); a failure raises with the
  tool's own last words, which say more than its exit code."""
  with tempfile.TemporaryFile() as err:
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE if stdin is not None else None,
        stdout=stdout, stderr=err)
    if stdin is not None:
      try:
        for line in stdin:
          process.stdin.write(line.encode("utf-8"))
        process.stdin.close()
      except BrokenPipeError:  # the tool stopped early; its stderr says why
        pass
      except BaseException:
        process.kill()
        process.wait()
        raise
    if process.wait() == 0:
      return
    err.seek(0)
    said = err.read().decode("utf-8", "replace").strip()[-_STDERR_SHOWN:]
  raise errors.DataError(
      f"{os.path.basename(command[0])} failed (exit {process.returncode}): "
      f"{said}\n{fix}".rstrip())


def _sentences(path: str, vocabulary: frozenset[str] | None = None
               ) -> list[str]:
  """The input's lines as the LM sees them; empty lines are dropped (with
  a warning). Held in memory: LM corpora here are references (the paper:
  40,000), far below the encoders' data."""
  lines, _ = readers.read_lines(path, empty="drop",
                                fix="Empty lines are dropped.")
  readers.sentences_only(path, lines)
  if not lines:
    raise errors.DataError(f"{path}: no sentence to train a language model "
                           "on; give one sentence per line.")
  return [sentence(line, vocabulary) + "\n" for line in lines]


def _estimate(lmplz: str, lines: list[str], input: str, order: int,
              arpa: str, memory: str, discount_fallback: bool,
              vocab_pad: int = 0) -> None:
  """lmplz: sentences -> an ARPA file."""
  command = [lmplz, "--order", str(order), "--memory", memory,
             "--temp_prefix", os.path.dirname(arpa) + os.sep,
             "--vocab_pad", str(vocab_pad)]
  if discount_fallback:
    command.append("--discount_fallback")
  with open(arpa, "wb") as out:
    _run(command, stdin=iter(lines), stdout=out.fileno(),
         fix=f"Input: {input}. A small corpus whose counts of counts do not "
         "allow modified Kneser-Ney discounts needs --discount-fallback.")


def train_lm(input: str, output: str, order: int = 3, format: str = "binary",
             memory: str = "1G", discount_fallback: bool = False,
             overwrite: bool = False,
             vocabulary: frozenset[str] | None = None,
             vocab_pad: bool = True) -> None:
  """Writes `output`: an `order`-gram modified Kneser-Ney LM of `input`'s
  lines, tokenized as `sentence` does (with `vocabulary`, if given, and
  then padded to its size unless `vocab_pad` is False), in KenLM's binary
  (probing) format or as ARPA text.

  The output appears whole or not at all (built in a temporary folder
  beside it, then renamed; a SIGKILL may leave that `.tmp-lm-*` folder,
  never a partial LM). A rerun with the same input and settings finds
  it written and does nothing; other settings are refused unless
  `overwrite` (`files.claim_output`).
  """
  if format not in FORMATS:
    raise errors.ConfigError(f"--format {format}: one of {', '.join(FORMATS)}")
  if order < 1:
    raise errors.ConfigError(f"--order {order}: give an n-gram order >= 1.")
  files.check_output(output)
  # A missing, empty or bad input stops here.
  lines = _sentences(input, vocabulary)
  tools = [tool(t) for t in TOOLS[:1 if format == "arpa" else 2]]
  settings = {"input": sha256(input), "order": order, "format": format,
              "discount_fallback": discount_fallback,
              "tokens": "paraflax.data.words.tokenize, space-joined"}
  if vocabulary is not None:
    settings["vocabulary"] = hashlib.sha256(
        "\n".join(sorted(vocabulary)).encode()).hexdigest()
    settings["vocab_pad"] = vocab_pad
  files.claim_output(output, settings, overwrite=overwrite)
  if os.path.isfile(output):
    print(f"{output}: already written by this command; nothing to do",
          file=sys.stderr)
    return
  folder = os.path.dirname(os.path.abspath(output))
  with tempfile.TemporaryDirectory(dir=folder, prefix=".tmp-lm-") as tmp:
    arpa = os.path.join(tmp, "lm.arpa")
    # The events an LM predicts: the closed vocabulary, OOV and </s>.
    # lmplz's uniform distribution is over the padded size, which counts
    # <unk> but not <s>: <unk>'s share and the padding's are the vocabulary
    # words the LM never saw, one each, so its probabilities over the
    # closed vocabulary sum to one.
    pad = (len(vocabulary | {OOV}) + 1
           if vocabulary is not None and vocab_pad else 0)
    _estimate(tools[0], lines, input, order, arpa, memory, discount_fallback,
              pad)
    faults.moment("train_lm.estimated")
    made = arpa
    if format == "binary":
      made = os.path.join(tmp, "lm.binary")
      _run([tools[1], "-S", memory, arpa, made],
           fix="The ARPA file lmplz wrote could not be converted.")
    files.copy_atomic(made, output)
  print(f"{output}: {order}-gram modified Kneser-Ney LM ({format}) of "
        f"{input}", file=sys.stderr)


def load(path: str):
  """The `kenlm.Model` of an LM file (binary or ARPA); a missing file or
  one that is not a KenLM LM stops with a `DataError` naming it."""
  try:
    import kenlm  # pylint: disable=import-outside-toplevel
  except ImportError as e:
    raise errors.ConfigError(
        "The kenlm module is not installed: pip install -c constraints.txt "
        "-e . installs it.") from e
  if not os.path.isfile(path):
    raise errors.DataError(f"{path}: no such LM file (--lm); train one "
                           "with paraflax train-lm.")
  try:
    return kenlm.Model(path)
  except (OSError, RuntimeError) as e:
    raise errors.DataError(
        f"{path}: not a KenLM language model (ARPA or binary): "
        f"{str(e).strip().splitlines()[-1] if str(e).strip() else e}. "
        "Train one with paraflax train-lm.") from e


def perplexity_scorer(path: str) -> scores.BlockScorer:
  """`lm_ppl` for score-paraphrases: the perplexity of a pair's
  translation under the LM of `path`, KenLM's own `Model.perplexity`:
  10 ** (-log10 P / (N + 1)), P the probability of the translation's N
  tokens and of </s>, each given its n-gram history from <s> (</s> is
  predicted, <s> only conditions). An empty translation: the perplexity of
  </s> alone. The file's sha256 is its identity in the output's settings."""
  model = load(path)
  return scores.BlockScorer(
      "lm_ppl", {"sha256": sha256(path)},
      lambda pairs: [model.perplexity(" ".join(p.translation))
                     for p in pairs])
