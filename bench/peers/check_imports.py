#!/usr/bin/env python3
"""CI check for the peer scripts, which only run on a GPU machine: each one compiles, and every
name it imports from a sibling module (common, mx_tile, router_common) is defined there.
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
print("\n".join(bad) or f"check_imports: {len(trees)} peer scripts ok")
sys.exit(1 if bad else 0)
