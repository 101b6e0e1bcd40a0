#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define N 100000000L
#define R8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
int main(){
  __m512i u=_mm512_set1_epi8(3), w=_mm512_set1_epi8(5); __m512 x=_mm512_set1_ps(1.0001f), y=_mm512_set1_ps(0.999f);
  __m256i u2=_mm256_set1_epi8(3), w2=_mm256_set1_epi8(5);
#define D(i) __m512i a##i=_mm512_set1_epi32(i); __m256i b##i=_mm256_set1_epi32(i); __m512 f##i=_mm512_set1_ps(i);
  R8(D)
  double t=now();
#define DP(i) a##i=_mm512_dpbusd_epi32(a##i,u,w);
  for(long n=0;n<N;n++){ R8(DP) __asm__ volatile(""::"v"(a0)); }
  double t1=now()-t; t=now();
#define DP2(i) b##i=_mm256_dpbusd_epi32(b##i,u2,w2);
  for(long n=0;n<N;n++){ R8(DP2) __asm__ volatile(""::"v"(b0)); }
  double t2=now()-t; t=now();
#define FM(i) f##i=_mm512_fmadd_ps(f##i,x,y);
  for(long n=0;n<N;n++){ R8(FM) __asm__ volatile(""::"v"(f0)); }
  double t3=now()-t; t=now();
#define MX(i) a##i=_mm512_dpbusd_epi32(a##i,u,w); f##i=_mm512_fmadd_ps(f##i,x,y);
  for(long n=0;n<N;n++){ MX(0) MX(1) MX(2) MX(3) __asm__ volatile(""::"v"(f0)); }
  double t4=now()-t; t=now();
#define CV(i) f##i=_mm512_add_ps(f##i, _mm512_cvtepi32_ps(a##i));
  for(long n=0;n<N;n++){ R8(CV) __asm__ volatile(""::"v"(f0)); }
  double t5=now()-t;
#define S(i) + _mm512_reduce_add_epi32(a##i) + _mm256_extract_epi32(b##i,0) + (long)_mm512_reduce_add_ps(f##i)
  long s = 0 R8(S);
  printf("ns per instr: zmm dpbusd %.3f  ymm dpbusd %.3f  zmm fma %.3f  mixed dp+fma %.3f  cvt+add pair %.3f (%ld)\n", t1/N/8*1e9, t2/N/8*1e9, t3/N/8*1e9, t4/N/8*1e9, t5/N/8*1e9, s&1);
}
