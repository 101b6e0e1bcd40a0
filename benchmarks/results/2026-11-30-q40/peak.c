#include <immintrin.h>
#include <stdio.h>
#include <time.h>
#include <pthread.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define N 200000000L
static void* run(void*p){
 __m256i a[12]; __m256i x=_mm256_set1_epi8(3), y=_mm256_set1_epi8(5);
 for(int i=0;i<12;i++) a[i]=_mm256_setzero_si256();
 for(long n=0;n<N/12;n++){
  #pragma GCC unroll 12
  for(int i=0;i<12;i++) a[i]=_mm256_dpbusd_epi32(a[i],x,y);
  __asm__ volatile("":"+x"(x));
 }
 __m256i s=a[0]; for(int i=1;i<12;i++) s=_mm256_add_epi32(s,a[i]);
 *(int*)p=_mm256_extract_epi32(s,0); return 0;}
static void* run512(void*p){
 __m512i a[12]; __m512i x=_mm512_set1_epi8(3), y=_mm512_set1_epi8(5);
 for(int i=0;i<12;i++) a[i]=_mm512_setzero_si512();
 for(long n=0;n<N/12/2;n++){
  #pragma GCC unroll 12
  for(int i=0;i<12;i++) a[i]=_mm512_dpbusd_epi32(a[i],x,y);
  __asm__ volatile("":"+v"(x));
 }
 __m512i s=a[0]; for(int i=1;i<12;i++) s=_mm512_add_epi32(s,a[i]);
 *(int*)p=_mm512_reduce_add_epi32(s); return 0;}
int main(){
 int r[2]; pthread_t t[2];
 for(int w=0;w<2;w++){
 void*(*f)(void*)= w?run512:run;
 double t0=now(); f(r); double t1=now();
 printf("%s 1 thread: %.1f G dpbusd-ymm-equiv/s -> %.0f GOPS\n", w?"zmm":"ymm", N/(t1-t0)/1e9, N/(t1-t0)*64/1e9);
 t0=now(); for(int i=0;i<2;i++) pthread_create(&t[i],0,f,r+i); for(int i=0;i<2;i++) pthread_join(t[i],0); t1=now();
 printf("%s 2 threads: %.0f GOPS\n", w?"zmm":"ymm", 2*N/(t1-t0)*64/1e9);
 }
}
