# Peers of mxfp8_grouped_gemm_dgrad: bench/peers/gemm_peers.py says which and how they are timed.
# Usage: python3 mxfp8_grouped_gemm_dgrad.py OUT.json
import sys

from gemm_peers import main

if __name__ == "__main__":
    main("mxfp8_grouped_gemm_dgrad", sys.argv[1])
