# Peers of bf16_grouped_gemm: bench/peers/gemm_peers.py says which and how they are timed.
# Usage: python3 bf16_grouped_gemm.py OUT.json
import sys

from gemm_peers import main

if __name__ == "__main__":
    main("bf16_grouped_gemm", sys.argv[1])
