"""The public corpora a de-en notebook needs, downloaded where the bundled
data is missing (e.g. in Google Colab), and checked by hash.

Multi30k Task 1 comes byte for byte from GitHub `multi30k/dataset`; the WMT
news test sets as plain text from GitHub `Helsinki-NLP/OPUS-MT-testsets`
(gzipped here as in `newstest_train_pool`), both at the commits the bundled
copies name in their DATA.md. Each file's uncompressed text must have the
sha256 of the bundled copy, so a download gives the same results.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import pathlib
import re
import sys
import urllib.request

from paraflax import errors

SOURCES = {
    "multi30k": "https://raw.githubusercontent.com/multi30k/dataset/"
                "a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1/raw/",
    "opus": "https://raw.githubusercontent.com/Helsinki-NLP/OPUS-MT-testsets/"
            "ac0f19c0be3cb4e0d9450fcb2d7a9847c4bdd180/testsets/",
}

# data-dir path -> sha256 of its uncompressed text (as bundled).
SHA256 = {
    "multi30k_task1/test_2016_flickr.de.gz":
        "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
    "multi30k_task1/test_2016_flickr.en.gz":
        "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
    "multi30k_task1/test_2017_flickr.de.gz":
        "c3078bc3b36808bf9d20eb2347ed6137016179ef59ec0d2b9b8ecc3fb2880081",
    "multi30k_task1/test_2017_flickr.en.gz":
        "ce1450ddc5ab0834502579d77a170849952e15a2938b34cc503bdc25ebb4fb98",
    "multi30k_task1/test_2017_mscoco.de.gz":
        "58277df3c75f92f7145a11b910b553d1cf82c439249d4dc237c899609eafac22",
    "multi30k_task1/test_2017_mscoco.en.gz":
        "43051fdfa86fd5395182e718a94ca67b1b227b9f7c79596ff0f6b813216981d2",
    "multi30k_task1/test_2018_flickr.de.gz":
        "39fcc8b3331d76fb42d648d019c6898b0d5e58baac87bc2a0bb93f44ec8db207",
    "multi30k_task1/test_2018_flickr.en.gz":
        "4e585c2dd525911a6ea7730e9d0b516239af3f1b1ffae6a2130223cfb639f25e",
    "multi30k_task1/train.de.gz":
        "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
    "multi30k_task1/train.en.gz":
        "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
    "multi30k_task1/val.de.gz":
        "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
    "multi30k_task1/val.en.gz":
        "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
    "newstest_dev/newstest2012.deu":
        "946b9587b79271b0f3ce9cc8c0e5b310e3021ef598e1ba5dc2a24fef8960de30",
    "newstest_dev/newstest2012.eng":
        "f9e51f85c4948033fc7d77ef427f4d88908a8dd3f778970f62d0baafac3ff97e",
    "newstest_dev/newstest2013.deu":
        "d7ea35ab91ff3709e03ad9cb6bf5b4f2cc775cd2d72efd5254c4aec5e69663ca",
    "newstest_dev/newstest2013.eng":
        "ace268a1d9724ca76f6d8e5c720ffdc08f01bdce45630ed8b269dc7918e1c16e",
    "newstest_train_pool/news-test2008.deu.gz":
        "6d86c805e6cd008c11143816daac272fdf5a3afea816983c43005717d6fe3ae2",
    "newstest_train_pool/news-test2008.eng.gz":
        "134e1140848bb0d05e774dbe35b8b69602faf401250c03dbb437bdbe38c37b6f",
    "newstest_train_pool/newssyscomb2009.deu.gz":
        "da74e91ec9f155a958a9cfcdb8e4291162b31b589e09306c40528aaf684d2fec",
    "newstest_train_pool/newssyscomb2009.eng.gz":
        "b734a44294fa3b23a2491cd9a2c59fb5eb71332ace70b2c9039978863dd0e43d",
    "newstest_train_pool/newstest2009.deu.gz":
        "c3a23d90e89c080cd3257a23365187e91939be4067176861fb88df7f61864b40",
    "newstest_train_pool/newstest2009.eng.gz":
        "c74a4862decfe87f88fb10eacdcb6ac972a648f0dd6deeb25ac2dbc6128dc0b6",
    "newstest_train_pool/newstest2010.deu.gz":
        "4f4b02d3abe150ca47a745d138d90f688edb20dd2d2fedca16aa05fd1e2018b1",
    "newstest_train_pool/newstest2010.eng.gz":
        "1ebece77e333965cbc66fde735a6f17e026b4d6690f4f7fdaba839b7bdadac3b",
    "newstest_train_pool/newstest2011.deu.gz":
        "033bc05659f61c5e51170973267d21e23a9a968557b866f3842c92e416a60e1b",
    "newstest_train_pool/newstest2011.eng.gz":
        "d387569743c0fa9097df4d4e2c1dd9e6ba9ef3cee6e0f473da3204c887dcf8fd",
    "newstest_train_pool/newstest2015.deu-eng.deu.gz":
        "796cce52ab248469187b60f60715a738a0b92944dc010a69a0083de7fae1b513",
    "newstest_train_pool/newstest2015.deu-eng.eng.gz":
        "422fbb5a274c7aae1a0890381cd4516307ca7bc957604220d4871a91664121e5",
    "newstest_train_pool/newstest2016.deu-eng.deu.gz":
        "738ca1ced4099937127be3208ba70d46e7a93550cd57cfd645f3d35e0e52a254",
    "newstest_train_pool/newstest2016.deu-eng.eng.gz":
        "cd5c112a358d9c99b9557eb358e16d7a94f8fa93ad7aa61bf5f1141f2e1f8854",
    "newstest_train_pool/newstest2017.deu-eng.deu.gz":
        "675e4f7e6045dacf56507e29b24106d771a571e0eb58d822806b086cdcf892f4",
    "newstest_train_pool/newstest2017.deu-eng.eng.gz":
        "11adaec47477928dab9cb3fc9279d99dbbbfec7161f3abf6fddd759668fcd703",
    "newstest_train_pool/newstest2018.deu-eng.deu.gz":
        "c53059fc440b3771aef2a83b15fddd8d2b3490c55b552dcae245f9a2df126c9c",
    "newstest_train_pool/newstest2018.deu-eng.eng.gz":
        "721b207ca2b4e4689f978e17ee5edb0988d7c901acd651fd666bcd9c1950233b",
    "newstest_train_pool/newstest2019.deu-eng.deu.gz":
        "601988e41931965e2c4eba80799d1fc9b43837e20bcae8e61edf21542805d449",
    "newstest_train_pool/newstest2019.deu-eng.eng.gz":
        "95152920451528b9e167d42def3fd7d0ea0d9a4f12e88bdf63b4adba4975cb1d",
    "newstest_train_pool/newstest2020.deu-eng.deu.gz":
        "0add9464880d8d0b4b546344c7d77a00711878830397f7333c49c993eb048d31",
    "newstest_train_pool/newstest2020.deu-eng.eng.gz":
        "39ed144d204c675097e5a53514c89549fbe4d753520d96c4c513b8b9920e89a9",
}


def remote(path: str) -> tuple[str, str]:
  """(source, path under it) of a data-dir file."""
  folder, name = path.split("/")
  if folder == "multi30k_task1":
    return "multi30k", name
  name = name.removesuffix(".gz")
  # newstest2015.deu-eng.deu -> newstest2015-deen.deu (the de-en direction)
  name = re.sub(r"^(newstest\d{4})\.deu-eng\.", r"\1-deen.", name)
  return "opus", f"deu-eng/{name}"


def _get(url: str) -> bytes:
  with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310
    return response.read()


def fetch(root: str | os.PathLike, mirror: str | None = None
          ) -> pathlib.Path:
  """Downloads every file of `SHA256` missing under `root` (a data dir, as
  PARAFLAX_DATA_DIR names) and returns `root`. `mirror`: a base URL with
  one folder per source (`multi30k/`, `opus/`) laid out as upstream, used
  instead of `SOURCES`. A file whose text has another hash stops the
  download with DataError and is not kept."""
  root = pathlib.Path(root)
  urls = ({name: f"{mirror.rstrip('/')}/{name}/" for name in SOURCES}
          if mirror else SOURCES)
  todo = [p for p in SHA256 if not (root / p).exists()]
  for n, path in enumerate(todo, 1):
    source, name = remote(path)
    url = urls[source] + name
    print(f"[{n}/{len(todo)}] {url}", file=sys.stderr)
    data = _get(url)
    text = gzip.decompress(data) if source == "multi30k" else data
    if hashlib.sha256(text).hexdigest() != SHA256[path]:
      raise errors.DataError(f"{url}: not the expected content (sha256 "
                             f"mismatch for {path}); nothing was written.")
    if path.endswith(".gz") and source != "multi30k":
      data = gzip.compress(text, mtime=0)
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_bytes(data)
    os.replace(partial, target)
  return root
