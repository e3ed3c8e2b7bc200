#!/usr/bin/env python3
"""CI check for the peer scripts, which only run on a GPU machine: each one compiles, every
name it imports from a sibling module (common, mx_tile, router_common) is defined there, and its
shapes come from the spec (where DIR has spec_shapes.py): no literal SHAPES list, and every
bench_shapes("problem", "SYM", ...) call names a problem and symbols its spec has.
Usage: check_imports.py [DIR]"""
import ast, glob, os, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
trees = {}
for path in sorted(glob.glob(os.path.join(root, "*.py"))):
    with open(path) as f:
        trees[os.path.basename(path)[:-3]] = ast.parse(f.read(), path)  # raises on a syntax error
defined = {m: {n.name for n in t.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))} |
           {a.asname or a.name for n in t.body if isinstance(n, (ast.Import, ast.ImportFrom))
            for a in n.names} |
           {tg.id for n in t.body if isinstance(n, ast.Assign) for tg in n.targets
            if isinstance(tg, ast.Name)}
           for m, t in trees.items()}
bad = [f"{m}.py imports {a.name} from {n.module}, which does not define it"
       for m, t in trees.items() for n in ast.walk(t)
       if isinstance(n, ast.ImportFrom) and n.module in trees
       for a in n.names if a.name not in defined[n.module]]
# The shape rules hold where spec_shapes.py is (the peers; profile programs pick their own shapes).
calls = 0
if "spec_shapes" in trees:
    sys.path.insert(0, root)
    from spec_shapes import bench_shapes  # torch-free
for m, t in trees.items() if "spec_shapes" in trees else ():
    for n in ast.walk(t):
        if (isinstance(n, ast.Assign) and any(getattr(g, "id", None) == "SHAPES" for g in n.targets)
                and isinstance(n.value, (ast.List, ast.Tuple))):
            bad.append(f"{m}.py:{n.lineno}: SHAPES is a literal list; read the spec's bench shapes "
                       "with spec_shapes.bench_shapes")
        if (isinstance(n, ast.Call) and getattr(n.func, "id", None) == "bench_shapes"
                and n.args and all(isinstance(a, ast.Constant) for a in n.args)):
            calls += 1
            try:
                if not bench_shapes(*(a.value for a in n.args)):
                    bad.append(f"{m}.py:{n.lineno}: {n.args[0].value} has no bench shapes")
            except (OSError, ValueError, KeyError) as e:
                bad.append(f"{m}.py:{n.lineno}: bench_shapes: {e}")
print("\n".join(bad) or f"check_imports: {len(trees)} peer scripts ok, {calls} spec shape lists")
sys.exit(1 if bad else 0)
