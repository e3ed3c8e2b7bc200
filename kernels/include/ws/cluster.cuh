// warpsmith device library: thread block cluster barriers and distributed shared memory
// (sm_90+), for kernels whose plan launches clusters.
#pragma once

namespace ws {

__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
/// A full cluster barrier: this CTA's shared memory writes before it are visible to the
/// cluster's reads after it.
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive_release();
  cluster_wait();
}
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
/// Shared address `local` (this CTA's layout) in cluster CTA `rank`, for the shared::cluster
/// forms below.
__device__ __forceinline__ unsigned cluster_addr(unsigned local, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}

/// The float4 at shared address `local` (this CTA's layout) in cluster CTA `rank`.
__device__ __forceinline__ float4 cluster_load_f4(const void* local, unsigned rank) {
  const unsigned remote =
      cluster_addr(static_cast<unsigned>(__cvta_generic_to_shared(local)), rank);
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(remote)
               : "memory");
  return v;
}

/// The int at shared address `local` (this CTA's layout) in cluster CTA `rank`.
__device__ __forceinline__ int cluster_load_s32(const void* local, unsigned rank) {
  const unsigned remote =
      cluster_addr(static_cast<unsigned>(__cvta_generic_to_shared(local)), rank);
  int v;
  asm volatile("ld.shared::cluster.s32 %0, [%1];" : "=r"(v) : "r"(remote) : "memory");
  return v;
}

}  // namespace ws
