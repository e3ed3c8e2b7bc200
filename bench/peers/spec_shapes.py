# The problems' specs as the peer scripts read them: the bench shapes come from spec.json, so a
# peer times exactly the shapes the evaluator times and no copy of the list can drift. Torch-free:
# CI's check_imports.py calls it too.
import json, os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def spec_of(problem):
    with open(os.path.join(ROOT, "problems", problem, "spec.json")) as f:
        return json.load(f)


def bench_shapes(problem, *symbols):
    """The bench shapes of `problem` in the spec's order: with symbols, tuples of those symbols'
    values; without, dicts of the symbols in the shape's own order."""
    spec = spec_of(problem)
    missing = [s for s in symbols if s not in spec["symbols"]]
    if missing:
        raise ValueError(f"{problem}: no symbol {', '.join(missing)} in its spec "
                         f"(symbols: {', '.join(spec['symbols'])})")
    shapes = spec["shapes"]["bench"]
    if not symbols:
        return [{k: v for k, v in shape.items() if k in spec["symbols"]} for shape in shapes]
    return [tuple(shape[s] for s in symbols) for shape in shapes]


def wanted(shape):
    """Whether PEERS_WHERE (a Python expression over the shape's symbols, e.g. "M > 16 and
    M <= 128") keeps `shape` (a dict); every shape when it is unset."""
    where = os.environ.get("PEERS_WHERE")
    return not where or bool(eval(where, {}, dict(shape)))
