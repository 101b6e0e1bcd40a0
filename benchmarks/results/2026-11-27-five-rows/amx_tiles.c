#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
typedef struct { uint8_t palette, start; uint8_t rsv[14]; uint16_t colsb[16]; uint8_t rows[16]; } cfg_t;
static uint8_t bufA[16*64] __attribute__((aligned(64))), bufB[16*64] __attribute__((aligned(64)));
static int32_t bufC[8][16*16] __attribute__((aligned(64)));
int main(int argc,char**argv){
  syscall(SYS_arch_prctl, 0x1023, 18);
  for (int R=1; R<=16; R = R==1?5:R==5?8:R==8?16:99) for (int K=16; K<=64; K*=4) {
    cfg_t c; memset(&c,0,sizeof c); c.palette=1;
    for(int t=0;t<4;t++){c.rows[t]=R;c.colsb[t]=64;}          /* C */
    c.rows[4]=R; c.colsb[4]=K; c.rows[5]=R; c.colsb[5]=K;      /* A */
    c.rows[6]=K/4; c.colsb[6]=64; c.rows[7]=K/4; c.colsb[7]=64;  /* B */
    _tile_loadconfig(&c);
    _tile_loadd(4,bufA,64); _tile_loadd(5,bufA,64); _tile_loadd(6,bufB,64); _tile_loadd(7,bufB,64);
    _tile_zero(0);_tile_zero(1);_tile_zero(2);_tile_zero(3);
    const long N=2000000; double t=now();
    for(long i=0;i<N;i++){ _tile_dpbusd(0,4,6); _tile_dpbusd(1,5,7); _tile_dpbusd(2,4,7); _tile_dpbusd(3,5,6); }
    double tdp=(now()-t)/N/4*1e9; t=now();
    for(long i=0;i<N;i++){ _tile_loadd(6,bufB,64); _tile_loadd(7,bufB+0,64); _tile_loadd(4,bufA,64); _tile_loadd(5,bufA,64);}
    double tld=(now()-t)/N/4*1e9; t=now();
    for(long i=0;i<N;i++){ _tile_stored(0,bufC[0],64); _tile_stored(1,bufC[1],64); _tile_stored(2,bufC[2],64); _tile_stored(3,bufC[3],64);}
    double tst=(now()-t)/N/4*1e9; t=now();
    /* a realistic step: zero C, load A and B, dp, store C (4 independent in flight) */
    for(long i=0;i<N;i++){
      _tile_zero(0); _tile_loadd(6,bufB,64); _tile_loadd(4,bufA,64); _tile_dpbusd(0,4,6); _tile_stored(0,bufC[0],64);
      _tile_zero(1); _tile_loadd(7,bufB,64); _tile_loadd(5,bufA,64); _tile_dpbusd(1,5,7); _tile_stored(1,bufC[1],64);
      _tile_zero(2); _tile_dpbusd(2,4,7); _tile_stored(2,bufC[2],64);
      _tile_zero(3); _tile_dpbusd(3,5,6); _tile_stored(3,bufC[3],64);
    }
    double tstep=(now()-t)/N/4*1e9;
    printf("R=%2d K=%2d: tdpbusd %.2f ns  tileloadd %.2f ns  tilestored %.2f ns  step(zero+dp+store, 2 loads/4) %.2f ns\n",R,K,tdp,tld,tst,tstep);
    _tile_release();
  }
}
