#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(void){
  long N=200000000;
  /* frequency: dependent scalar add chain, 1 cycle each */
  double a=now(); long x=0; for(long i=0;i<N;i++){ __asm__ volatile("add $1, %0" : "+r"(x)); } double f=N/(now()-a);
  printf("~%.2f GHz (1-cycle add chain)\n", f/1e9);
  __m256i acc[12]; for(int k=0;k<12;k++) acc[k]=_mm256_set1_epi32(k);
  __m256i w=_mm256_set1_epi8(3), v=_mm256_set1_epi8(5);
  long M=50000000; a=now();
  for(long i=0;i<M;i++){
    _Pragma("GCC unroll 12") for(int k=0;k<12;k++) acc[k]=_mm256_dpbusd_avx_epi32(acc[k],w,v);
    __asm__ volatile("" : "+x"(w));
  }
  double t=now()-a; __m256i s=acc[0]; for(int k=1;k<12;k++) s=_mm256_add_epi32(s,acc[k]);
  printf("dpbusd ymm: %.2f per ns, %.2f per cycle (%d)\n", 12.0*M/t/1e9, 12.0*M/t/f, _mm256_extract_epi32(s,0));
  for(int k=0;k<12;k++) acc[k]=_mm256_set1_epi32(k);
  a=now();
  for(long i=0;i<M;i++){
    _Pragma("GCC unroll 12") for(int k=0;k<12;k++) acc[k]=_mm256_add_epi16(acc[k],_mm256_maddubs_epi16(w,v));
    __asm__ volatile("" : "+x"(w));
  }
  t=now()-a; s=acc[0]; for(int k=1;k<12;k++) s=_mm256_add_epi32(s,acc[k]);
  printf("maddubs+add16 ymm: %.2f pairs per cycle (%d)\n", 12.0*M/t/f, _mm256_extract_epi32(s,0));
  return 0;
}
