// hostile: expect=compile_error gpu=no what=".incbin in inline assembly (PTX has no .incbin; blocked before ptxas)" message=".incbin"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {
  asm volatile(".incbin \"/etc/passwd\"");
}
