/* The rate of vpmaddubsw (each into its own int16 sum) on one core: 12 independent sums, the weights passed
   through an empty asm so that no product is hoisted. gcc -O2 -mavx2 -mfma maddubs.c -o maddubs && ./maddubs
   (cycles at the 3.25 GHz row_floor.py measured). */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(void){
  __m256i a[12]; __m256i w=_mm256_set1_epi8(3), x=_mm256_set1_epi8(5);
  for(int i=0;i<12;i++) a[i]=_mm256_set1_epi16(i);
  long n=200000000; double best=1e9;
  for(int rep=0;rep<5;rep++){ double t=now();
  for(long k=0;k<n/12;k++){
    #pragma GCC unroll 12
    for(int i=0;i<12;i++){ __m256i ww=w; __asm__ volatile("" : "+x"(ww)); a[i]=_mm256_add_epi16(a[i],_mm256_maddubs_epi16(ww,x)); }
    __asm__ volatile("" : "+x"(w));
  }
  double dt=(now()-t)/n*1e9; if(dt<best)best=dt;}
  long s=0; for(int i=0;i<12;i++) s+=_mm256_extract_epi16(a[i],0);
  printf("maddubs+paddw: %.3f ns each = %.2f cycles at 3.25 GHz (%ld)\n",best,best*3.25,s);
  return 0;}
