"""The rooms of paraflax import only downward, and no module of paraflax/
imports itself through others (no circles), counting the imports inside
functions too; no module is longer than 400 lines. `python
tests/test_layers.py` prints the counts."""
import ast
import pathlib
import traceback

from tests.conftest import parse_python

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "paraflax"

# Lower number = lower room; a module may import its own room or a lower one.
LAYERS = {
    "errors": 0, "files": 0, "config": 0, "choices": 0, "vectors": 0,
    "faults": 0, "quiet": 0, "host": 0, "compile_cache": 0,
    "fingerprints": 0, "resume": 0,
    "data": 1,
    "models": 2,
    "losses": 3, "training": 3, "decoding": 3,
    "filtering": 4, "mining": 4, "domain": 4,
    "evaluation": 5,
    "recipes": 6,
    "inference": 7,
    "pipeline": 8, "api": 8, "aot": 8,
    "commands": 9, "cli": 9, "__init__": 9,
}


def _room(module: str) -> str:
  parts = module.split(".")
  return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: pathlib.Path) -> set[str]:
  found = set()
  for node in ast.walk(parse_python(path.read_text(encoding="utf-8"))):
    if isinstance(node, ast.Import):
      found |= {a.name for a in node.names}
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      found |= {f"{node.module}.{a.name}" for a in node.names}
  return {m for m in found if m.split(".")[0] == "paraflax"}


def _module(path: pathlib.Path) -> str:
  rel = path.relative_to(PACKAGE.parent).with_suffix("")
  return ".".join(rel.parts)


def test_every_room_has_a_layer():
  rooms = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
           if (p.suffix == ".py" or (p / "__init__.py").exists())}
  assert rooms <= set(LAYERS), sorted(rooms - set(LAYERS))


def upward_arrows() -> list[str]:
  upward = []
  for path in sorted(PACKAGE.rglob("*.py")):
    here = _module(path)
    for target in _imports(path):
      room = _room(target)
      if room in LAYERS and LAYERS[room] > LAYERS[_room(here)]:
        upward.append(f"{here} -> {target}")
  return upward


def test_imports_point_down():
  upward = upward_arrows()
  print(f"{len(upward)} upward arrows")
  assert not upward, "imports that point up:\n" + "\n".join(upward)


# --- circles ----------------------------------------------------------------

def _modules() -> dict[str, pathlib.Path]:
  """Module name -> file; a package by its own name (its __init__.py)."""
  out = {}
  for path in PACKAGE.rglob("*.py"):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
  return out


def import_graph() -> dict[str, set[str]]:
  """Module -> the paraflax modules it imports, anywhere in its file
  (module level, in functions, under `if TYPE_CHECKING`), relative imports
  resolved; `from package import name` points at the module `name` where
  there is one, else at the package."""
  modules = _modules()

  def resolve(name: str) -> str | None:
    while name and name not in modules:
      name = name.rpartition(".")[0]
    return name or None

  graph = {}
  for here, path in modules.items():
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    targets = set()
    for node in ast.walk(parse_python(path.read_text(encoding="utf-8"))):
      if isinstance(node, ast.Import):
        targets |= {resolve(a.name) for a in node.names}
      elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
          up = package.split(".")[:len(package.split(".")) - node.level + 1]
          base = ".".join(up + ([base] if base else []))
        targets |= {resolve(f"{base}.{a.name}") for a in node.names}
    graph[here] = {t for t in targets if t and t != here}
  return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
  """The strongly connected groups of more than one module (Tarjan's),
  each a circle of imports; a module that imports itself is left out."""
  index, low, stack, on_stack, found = {}, {}, [], set(), []

  def visit(v: str) -> None:
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in sorted(graph.get(v, ())):
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      group = []
      while True:
        w = stack.pop()
        on_stack.discard(w)
        group.append(w)
        if w == v:
          break
      if len(group) > 1:
        found.append(sorted(group))

  for v in sorted(graph):
    if v not in index:
      visit(v)
  return found


def test_no_import_circles():
  found = circles(import_graph())
  print(f"{len(found)} circles")
  assert not found, "modules that import each other:\n" + "\n".join(
      " <-> ".join(group) for group in found)


def test_the_circle_test_finds_a_planted_circle():
  graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
  assert circles(graph) == [["a", "b", "c"]]
  graph = import_graph()
  assert "paraflax.data.corpora" in graph["paraflax.data.specs"]
  assert not circles(graph)


# --- size -------------------------------------------------------------------

MAX_LINES = 400


def long_modules() -> list[str]:
  return [f"{path.relative_to(PACKAGE.parent)}: {n} lines"
          for path in sorted(PACKAGE.rglob("*.py"))
          if (n := len(path.read_text(encoding="utf-8").splitlines()))
          > MAX_LINES]


def test_no_module_is_longer_than_the_limit():
  long = long_modules()
  print(f"{len(long)} modules over {MAX_LINES} lines")
  assert not long, (f"modules over {MAX_LINES} lines (split them by what "
                    "they do):\n" + "\n".join(long))


class _LogsATracebackWhenCollected:
  def __init__(self):
    self.cycle = self
    try:
      raise KeyError("x")
    except KeyError as error:
      self.error = error

  def __del__(self):
    traceback.format_exception(self.error)


def test_the_source_parses_while_garbage_formats_tracebacks():
  source = (PACKAGE / "cli.py").read_text(encoding="utf-8")
  for _ in range(5):
    for _ in range(300):
      _LogsATracebackWhenCollected()
    assert parse_python(source).body


if __name__ == "__main__":
  print(f"{len(circles(import_graph()))} circles, "
        f"{len(upward_arrows())} upward arrows, "
        f"{len(long_modules())} modules over {MAX_LINES} lines")
