"""The rooms of paraflax import only downward (DESIGN.md, "Rooms")."""
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "paraflax"

# Lower number = lower room; a module may import its own room or a lower one.
LAYERS = {
    "errors": 0, "files": 0, "config": 0, "choices": 0, "vectors": 0,
    "faults": 0, "quiet": 0, "host": 0, "compile_cache": 0,
    "data": 1,
    "models": 2,
    "losses": 3, "training": 3, "decoding": 3,
    "filtering": 4, "mining": 4, "domain": 4,
    "evaluation": 5,
    "recipes": 6,
    "pipeline": 7, "api": 7,
    "commands": 8, "cli": 8, "__init__": 8,
}


def _room(module: str) -> str:
  parts = module.split(".")
  return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: pathlib.Path) -> set[str]:
  found = set()
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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


def test_imports_point_down():
  upward = []
  for path in sorted(PACKAGE.rglob("*.py")):
    here = _module(path)
    for target in _imports(path):
      room = _room(target)
      if room in LAYERS and LAYERS[room] > LAYERS[_room(here)]:
        upward.append(f"{here} -> {target}")
  assert not upward, "imports that point up:\n" + "\n".join(upward)
