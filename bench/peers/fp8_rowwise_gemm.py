# Peers of fp8_rowwise_gemm: bench/peers/gemm_peers.py says which and how they are timed.
# Usage: python3 fp8_rowwise_gemm.py OUT.json
import sys

from gemm_peers import main

if __name__ == "__main__":
    main("fp8_rowwise_gemm", sys.argv[1])
