# Peers of mxfp8_grouped_gemm_wgrad: bench/peers/gemm_peers.py says which and how they are timed.
# Usage: python3 mxfp8_grouped_gemm_wgrad.py OUT.json
import sys

from gemm_peers import main

if __name__ == "__main__":
    main("mxfp8_grouped_gemm_wgrad", sys.argv[1])
