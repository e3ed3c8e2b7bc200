// CHECK(call): a CUDA runtime call that must succeed, or the program says where and exits 1. For
// the standalone profile programs of this folder (built with nvcc alone).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,                 \
                   cudaGetErrorString(e_));                                          \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)
