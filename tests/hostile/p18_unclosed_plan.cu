// hostile: expect=plan_error gpu=no what="a plan comment that is never closed" message="not closed"
/* warpsmith:plan
{ "launch": [] }

extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}
