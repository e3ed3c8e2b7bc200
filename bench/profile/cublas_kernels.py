# The library GEMMs our dense kernels are measured against, launched twice each at the shapes
# where we trail them, for Nsight Compute to name their kernels (cuBLAS encodes tile shape,
# warpgroups and cluster in the name) and report launch configuration and throughput:
#   ncu -k 'regex:nvjet|gemm|xmma|cutlass' --section LaunchStats --section SpeedOfLight --csv \
#       python3 bench/profile/cublas_kernels.py
# Arguments narrow it to one GEMM for an instruction-level profile beside ours
# (scripts/gpu_session.sh ncu with NCU_PEER=1): cublas_kernels.py fp8|bf16 M N K
# fp8: torch._scaled_mm with rowwise fp32 scales (cuBLASLt, as bench/peers/gemm_peers.py);
# bf16: torch.mm (cuBLAS), B given [N,K] as in the peer.

import sys

import torch

FP8_SHAPES = [(16384, 4096, 7168), (8192, 8192, 8192)]  # (M, N, K): 0.82x / 0.88x in session 19
BF16_SHAPES = [(8192, 8192, 8192), (16384, 7168, 2048)]  # 0.91x / 0.90x in session 17


def main():
    fp8_shapes, bf16_shapes = FP8_SHAPES, BF16_SHAPES
    if len(sys.argv) == 5:  # one GEMM: dtype M N K
        shape = [(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))]
        fp8_shapes, bf16_shapes = (shape, []) if sys.argv[1] == "fp8" else ([], shape)
    elif len(sys.argv) != 1:
        sys.exit("usage: cublas_kernels.py [fp8|bf16 M N K]")
    torch.manual_seed(0)
    for m, n, k in fp8_shapes:
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
        sa = torch.rand(m, 1, device="cuda") + 0.5
        sb = torch.rand(1, n, device="cuda") + 0.5
        for _ in range(2):
            torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16)
    for m, n, k in bf16_shapes:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        for _ in range(2):
            torch.mm(a, b.t())
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
