"""Sentence encoders of trained workdirs, one entry per recipe, for
`paraflax embed` and `paraflax mine --workdir`; a paraphrase workdir's
word table for `paraflax export-words`.

Languages are checked against the workdir's config before its checkpoint is
loaded, so a wrong `--lang` fails at once.
"""
from __future__ import annotations

import glob
import hashlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from paraflax import config as config_lib
from paraflax import errors
from paraflax import faults
from paraflax import files
from paraflax.data import readers
from paraflax.mining import embeddings_io
from paraflax.mining import knn
from paraflax.mining import pipeline
from paraflax.mining import sides as sides_lib
from paraflax.recipes import workdir as workdir_lib
from paraflax.training import distributed

EmbedFn = Callable[[Sequence[str], str], np.ndarray]  # (texts, lang) -> [N, d]


def _paraphrase_check(workdir: str, langs: Sequence[str | None],
                      flags: str) -> None:
  other = sorted({lang for lang in langs if lang not in (None, "en")})
  if other:
    raise errors.ConfigError(
        f"{workdir} holds an English paraphrase encoder (recipe "
        f"'paraphrase'), which cannot embed {other[0]!r} text: use a "
        f"bilingual workdir, or set {flags} to en.")


def _paraphrase_load(workdir: str, mesh: Any = None) -> tuple[EmbedFn, int]:
  from paraflax.recipes import paraphrase  # pylint: disable=g-import-not-at-top
  if mesh is not None:
    raise errors.ConfigError(
        f"{workdir} holds a paraphrase encoder, which embeds over the "
        "config's devices only: embed its shards without --distributed "
        "(or run one command per process on its own shards).")
  embedder, params, step = paraphrase.load_for_inference(workdir)
  return (lambda texts, lang: embedder(params, texts)), step


def _bilingual_check(workdir: str, langs: Sequence[str | None],
                     flags: str) -> None:
  from paraflax.recipes import bilingual  # pylint: disable=g-import-not-at-top
  known = bilingual.languages(workdir_lib.load_config(workdir, "bilingual"))
  for lang in langs:
    if lang not in known:
      raise errors.ConfigError(
          f"{workdir} holds a bilingual model of {' and '.join(known)}: "
          f"set {flags} to {' or '.join(known)} to pick its encoder (got "
          f"{'none' if lang is None else repr(lang)}).")


def _bilingual_load(workdir: str, mesh: Any = None) -> tuple[EmbedFn, int]:
  from paraflax.recipes import bilingual  # pylint: disable=g-import-not-at-top
  embedder, params, step = bilingual.load_for_inference(workdir, mesh=mesh)
  return (lambda texts, lang: embedder(params, texts, lang)), step


# recipe -> (check: (workdir, languages to embed, the flags that name them)
#   raises if the encoder cannot embed one; load: (workdir, mesh: None for
#   the config's) -> (embed function, checkpoint step))
EMBEDDERS: dict[str, tuple[Callable[[str, Sequence[str | None], str], None],
                           Callable[..., tuple[EmbedFn, int]]]] = {
    "paraphrase": (_paraphrase_check, _paraphrase_load),
    "bilingual": (_bilingual_check, _bilingual_load)}


def check(workdir: str, langs: Sequence[str | None], flags: str = "--lang"
          ) -> str:
  """Raises ConfigError unless `workdir` holds an encoder that embeds every
  language in `langs` (None: the workdir's only language, for monolingual
  encoders); `flags` names the settings that chose `langs`, for the
  message. Reads only the config; returns the recipe."""
  recipe = workdir_lib.read_config(workdir).recipe
  if recipe not in EMBEDDERS:
    raise errors.ConfigError(
        f"{workdir} holds a {recipe!r} model, which does not embed "
        f"sentences; use a {' or '.join(map(repr, EMBEDDERS))} workdir.")
  EMBEDDERS[recipe][0](workdir, langs, flags)
  return recipe


def load(workdir: str, langs: Sequence[str | None], flags: str = "--lang",
         mesh: Any = None) -> tuple[EmbedFn, int]:
  """The encoder of `workdir`, checked first (`check`) to embed every
  language in `langs`, over `mesh` (None: the config's)."""
  loader = EMBEDDERS[check(workdir, langs, flags)][1]
  return loader(workdir) if mesh is None else loader(workdir, mesh)


def export_word_vectors(workdir: str, output: str | None = None) -> None:
  """`paraflax export-words`: the word table of a workdir's best (else
  newest) checkpoint as a word2vec text file (default W/word_vectors.txt),
  for another config's `model.word_vectors`."""
  from paraflax.data import words  # pylint: disable=g-import-not-at-top
  from paraflax.models import encoders  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import paraphrase  # pylint: disable=g-import-not-at-top
  embedder, params, step = paraphrase.load_for_inference(workdir)
  output = output or os.path.join(workdir, paraphrase.WORD_VECTORS_FILE)
  table = np.asarray(params[encoders.WORD_EMBED]["embedding"])
  words.save_word_vectors(output, embedder.vocab, table)
  print(f"{output}: {len(embedder.vocab) - 2} words x {table.shape[1]} "
        f"(step {step})")


def embed_sides(workdir: str, text_paths: Sequence[str | None],
                langs: Sequence[str | None]
                ) -> tuple[sides_lib.Side, sides_lib.Side]:
  """Both text files embedded with the encoder of `workdir`."""
  if None in text_paths or None in langs:
    raise errors.ConfigError("--workdir needs --src-text, --tgt-text, "
                             "--src-lang and --tgt-lang.")
  # As with embedding files, an empty line is a sentence (a zero vector).
  texts = [readers.read_lines(path, empty="keep")[0] for path in text_paths]
  embed, _ = load(workdir, langs, "--src-lang / --tgt-lang")
  sides = []
  for path, lines, lang in zip(text_paths, texts, langs):
    emb = knn.as_embeddings(embed(lines, lang), f"the embeddings of {path}")
    sides.append(sides_lib.Side(emb, lines, path,
                                hashlib.sha256(emb.tobytes()).hexdigest()))
  return sides[0], sides[1]


def embed_file(workdir: str, input: str, output: str,
               lang: str | None = None, fp16: bool | None = None,
               overwrite: bool = False, **cluster: Any) -> None:
  """`paraflax embed`: one sentence per line of `input` in, a raw float32
  (`fp16`: float16) N x d matrix (LASER's format) out; an `input` glob or
  comma-separated list: `embed_shards`."""
  if glob.has_magic(input) or "," in input:
    embed_shards(workdir, input, output, lang, fp16=fp16 is not False,
                 overwrite=overwrite, **cluster)
    return
  if any(cluster.get(key) for key in ("distributed", "coordinator",
                                       "num_processes")):
    raise errors.ConfigError("--distributed splits the shards of an --input "
                             "glob over the processes; one --input file is "
                             "embedded by one process.")
  files.check_output(output)
  texts, _ = readers.read_lines(
      input, fix="Remove them: every line is a sentence to embed.")
  if not texts:
    raise errors.DataError(f"{input}: empty file, nothing to embed. "
                           "Give one sentence per line.")
  embed, step = load(workdir, [lang])
  if _claimed_done(files.lines_digest(texts), output, workdir, step, lang,
                   bool(fp16), overwrite=overwrite, lock=True):
    print(f"already there: {output} (checkpoint step {step})",
          file=sys.stderr)
    return
  emb = embed(texts, lang)
  embeddings_io.write(output, emb, fp16=bool(fp16), overwrite=True)
  print(f"wrote {emb.shape[0]} x {emb.shape[1]} "
        f"{embeddings_io.dtype(bool(fp16)).name} in {output} "
        f"(checkpoint step {step})", file=sys.stderr)


def _claimed_done(text: str, out: str, workdir: str, step: int,
                  lang: str | None, fp16: bool, *, overwrite: bool,
                  lock: bool) -> bool:
  """Claims `out` with its settings (`OUT.meta.json`: `text`, the text's
  fingerprint or digest, the checkpoint, the language, the dtype; another
  run's is refused unless `overwrite`); whether it is already written."""
  settings = {"text": text,
              "workdir": os.path.abspath(workdir), "step": step,
              "lang": lang, "dtype": embeddings_io.dtype(fp16).name}
  files.claim_output(out, settings, overwrite=overwrite, lock=lock,
                     leftovers=(embeddings_io.info_path(out),))
  return os.path.exists(out) and os.path.exists(embeddings_io.info_path(out))


def shard_outputs(inputs: Sequence[str], output: str, fp16: bool
                  ) -> list[str]:
  """OUTPUT/<input file name>.f16 (.f32) for each input, or the error
  that names two inputs of one name."""
  names: dict[str, str] = {}
  for path in inputs:
    name = os.path.basename(path) + (".f16" if fp16 else ".f32")
    if name in names:
      raise errors.ConfigError(
          f"{names[name]} and {path} would both be embedded into "
          f"{os.path.join(output, name)}: give the shards distinct file "
          "names.")
    names[name] = path
  return [os.path.join(output, n) for n in names]


def embed_shards(workdir: str, input: str, output: str,
                 lang: str | None = None, *, fp16: bool = True,
                 overwrite: bool = False, **cluster: Any) -> int:
  """The text files of `input` (a glob or comma-separated list), each
  embedded into OUTPUT/<its name>.f16 (float16; `fp16` False: .f32) with
  its sidecar: the shards `paraflax mine --src-emb "OUTPUT/*.f16"` reads,
  row i of a shard for line i of its text file. Each shard is claimed
  with its settings (`SHARD.meta.json`: the text's fingerprint, the
  checkpoint step, the language), so a rerun skips the finished ones and
  refuses shards made otherwise unless `overwrite`. With `cluster`
  (`--distributed`), process p embeds shards p, p + P, ... on its own
  devices. The shards this process wrote."""
  inputs = embeddings_io.expand(input, "text file")
  outputs = shard_outputs(inputs, output, fp16)
  refuse = [(f"--input {p}", p) for p in inputs]
  files.refuse_inputs_as_outputs(refuse, [("--output", output)])
  if os.path.isfile(output):
    raise errors.ConfigError(f"--output {output} is a file; with several "
                             "inputs it is the folder of their shards.")
  check(workdir, [lang])
  distributed.join(**cluster)
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  me, count = partitioning.process()
  mine = list(zip(inputs, outputs))[me::count]
  os.makedirs(output, exist_ok=True)
  files.lock_output(os.path.join(output, f".embed-{me}"))
  embed, step = load(workdir, [lang],
                     mesh=partitioning.local_mesh() if count > 1 else None)
  written = 0
  for text_path, out in mine:
    if _claimed_done(embeddings_io.fingerprint(text_path), out, workdir,
                     step, lang, fp16, overwrite=overwrite, lock=False):
      continue
    texts, _ = readers.read_lines(
        text_path, fix="Remove them: every line is a sentence to embed.")
    if not texts:
      raise errors.DataError(f"{text_path}: empty file, nothing to embed. "
                             "Give one sentence per line.")
    emb = knn.as_embeddings(embed(texts, lang), f"the embeddings of "
                            f"{text_path}")
    embeddings_io.write(out, emb, fp16=fp16, overwrite=True)
    written += 1
    faults.moment("embed.shard")
  print(f"{output}: {written} shard(s) embedded, "
        f"{len(mine) - written} already there, of {len(mine)} for process "
        f"{me} of {count} (checkpoint step {step})", file=sys.stderr)
  return written


def mine_files(output: str, config: Mapping[str, Any] | None = None, *,
               src_emb: str | None = None, tgt_emb: str | None = None,
               dim: int | None = None, fp16: bool = False,
               src_text: str | None = None, tgt_text: str | None = None,
               workdir: str | None = None, src_lang: str | None = None,
               tgt_lang: str | None = None, overwrite: bool = False,
               src_index: str | None = None, tgt_index: str | None = None,
               **cluster: Any) -> int:
  """`paraflax mine`: embedding files (or texts embedded by `workdir`) in,
  the TSV of mined pairs out; `config` holds `pipeline.Options` fields
  (configs/mine.py), None: the defaults; `cluster`: one of several
  processes, each holding its share of the target rows
  (`training.distributed.join`); `src_index` / `tgt_index`: index folders
  (`paraflax index`) to search with a faiss `index` setting, built there
  when missing."""
  options = config_lib.fields_of(pipeline.Options, config)
  files.check_output(output)
  distributed.join(**cluster)
  texts = (src_text, tgt_text)
  if workdir and (src_emb or tgt_emb):
    raise errors.ConfigError(
        "give either --workdir (to embed the texts) or --src-emb/--tgt-emb, "
        "not both.")
  if workdir:
    src, tgt = embed_sides(workdir, texts, (src_lang, tgt_lang))
  else:
    src, tgt = sides_lib.load_sides((src_emb, tgt_emb), dim, fp16, texts)
  if (src_index or tgt_index) and options.faiss_string is None:
    raise errors.ConfigError(
        "--src-index / --tgt-index are index folders of a faiss --index "
        "(e.g. --index 'IVF4096,PQ16'); give that setting too.")
  written = pipeline.mine(src, tgt, options, output, overwrite=overwrite,
                          index_folders=(src_index, tgt_index))
  print(f"mined {written} pairs from {len(src.emb)} x {len(tgt.emb)} "
        f"sentences into {output}", file=sys.stderr)
  return written
