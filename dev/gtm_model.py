#!/usr/bin/env python3
"""dev/gtm_model.py - a host model of gtm.cu's index arithmetic (v16), for a session without a GPU.

The plan (mr_gtm_plan: W, Wp, NB, swr, G1, the 48 KB shared budget), K1 (the byte-granular
token masks and slot bit planes, written into a workspace full of garbage, the duplicate flags)
and K2 (counts, padded starts, local ids, emission order from the planes or, with a duplicate,
from the rows) are modelled step by step and compared with a direct reading of the contract
(docs/routing-contract.md 3) on random cases: duplicate-free rows, ids out of range, duplicates,
hot experts, expert masks (also all masked), U = 1 .. 100, several SM counts (so both the byte
and the word form of K1 run). It checks the algorithm, not the CUDA code itself (the device call
dev/lab_run49.sh does). A deliberate off-by-one in the planes' j or in a start makes it fail.

Run: python3 dev/gtm_model.py [seed] [cases]
"""
import random
import sys

def planes(k):
    p=0
    while (1<<p) < k: p+=1
    return p
def plan(T,E,k,sms=132):
    P=planes(k); W=(T+31)//32; Wp=(W+3)&~3
    rows=(1+P)*E
    if rows*Wp*4 > 64<<20: return None
    max_swr=(12288-E)//rows
    if max_swr<1: return None
    b4=4*W; target=2*sms
    NB=(b4+target-1)//target
    if NB>2:
        swr=(NB+3)//4
        if swr>max_swr: swr=max_swr
        NB=4*swr
    swr=(NB+3)//4
    G1=(b4+NB-1)//NB
    return dict(P=P,W=W,Wp=Wp,NB=NB,swr=swr,G1=G1,rows=rows,smem=(rows*swr+E)*4)


def check_plan(n=200000):
    for _ in range(n):
        E = random.choice([1, 2, 3, 7, 8, 64, 128, 160, 256, 384, 512, 768, 1024, random.randint(1, 1024)])
        k = random.randint(1, min(E, 32))
        T = random.choice([random.randint(1, 100), random.randint(1, 5000), random.randint(1, 300000)])
        g = plan(T, E, k, random.choice([132, 1, 7, 108, 170]))
        if g is None:
            continue
        NB, W, G1 = g['NB'], g['W'], g['G1']
        assert g['smem'] <= 48 * 1024, g
        assert G1 * NB >= 4 * W and (G1 - 1) * NB < 4 * W, (T, E, k, g)  # every byte of the W words once
        assert 8 * NB <= 32 * g['swr']
        if NB % 4 == 0:
            assert (G1 - 1) * g['swr'] < W
        else:
            assert g['swr'] == 1 and NB in (1, 2)
    print("plan ok")

def popc(x): return bin(x).count('1')
def model(T,E,k,U,ids,w,mask,sms):
    g=plan(T,E,k,sms); P=g['P']; W=g['W']; Wp=g['Wp']; NB=g['NB']; swr=g['swr']; G1=g['G1']
    rows=(1+P)*E
    gm=[[0xABABABAB]*Wp for _ in range(rows)]   # garbage workspace
    dupf=[None]*G1
    en=[1 if mask is None or mask[e] else 0 for e in range(E)]
    for c in range(G1):
        sm=[[0]*swr for _ in range(rows)]
        t0=c*NB*8; t1=min(T,t0+NB*8); dup=0
        if t0<t1:
            for i in range(t0*k,t1*k):
                e=ids[i] & 0xffffffff
                if e>=E or not en[e]: continue
                t=i//k; j=i-t*k; lt=t-t0; wi=lt>>5; bit=1<<(lt&31)
                old=sm[e][wi]; sm[e][wi]|=bit
                if old&bit: dup=1
                for p in range(P):
                    if (j>>p)&1: sm[(1+p)*E+e][wi]|=bit
        if NB%4==0:
            wbase=c*swr; nw=min(swr,W-wbase)
            for r in range(rows):
                for wi in range(nw): gm[r][wbase+wi]=sm[r][wi]
        else:
            bbase=c*NB; nb=min(NB,4*W-bbase)
            for r in range(rows):
                for b in range(nb):
                    byte=(sm[r][0]>>(8*b))&0xff
                    wi=(bbase+b)//4; sh=8*((bbase+b)%4)
                    gm[r][wi]=(gm[r][wi] & ~(0xff<<sh)) | (byte<<sh)
        dupf[c]=dup
    anydup=any(dupf)
    def word(r,wi): return gm[r][wi] if wi<W else 0
    # K2 statuses
    tot=[0]*E; pad=[0]*E
    for e in range(E):
        cnt=0
        for wi in range(W):
            bits=word(e,wi)
            if not anydup: cnt+=popc(bits)
            else:
                for b in range(32):
                    if bits>>b&1:
                        t=wi*32+b; cnt+=sum(1 for j in range(k) if (ids[t*k+j]&0xffffffff)==e)
        tot[e]=cnt; pad[e]=(cnt+U-1)//U*U
    L=sum(pad)
    sids=[None]*L; sw=[None]*L; stid=[None]*L; blocks={}
    for e in range(E):
        start=sum(pad[:e]); local=sum(en[:e]); pos=start
        for wi in range(W):
            bits=word(e,wi)
            for b in range(32):
                if not bits>>b&1: continue
                t=wi*32+b
                if not anydup:
                    j=sum(((word((1+p)*E+e,wi)>>b)&1)<<p for p in range(P))
                    js=[j]
                else:
                    js=[j for j in range(k) if (ids[t*k+j]&0xffffffff)==e]
                for j in js:
                    sids[pos]=(j<<24)|t; sw[pos]=w[t*k+j]; stid[pos]=t*k+j; pos+=1
        assert pos==start+tot[e]
        for q in range(start+tot[e],start+pad[e]): sids[q]=(k<<24)|T; sw[q]=0.0; stid[q]=T*k
        for b in range(start//U,(start+pad[e])//U): blocks[b]=local
    return sids,sw,stid,blocks,L,anydup
def ref(T,E,k,U,ids,w,mask):
    en=[1 if mask is None or mask[e] else 0 for e in range(E)]
    sids=[];sw=[];stid=[];blocks={}
    for e in range(E):
        ent=[(t,j) for t in range(T) for j in range(k) if (ids[t*k+j]&0xffffffff)==e] if en[e] else []
        start=len(sids); pad=(len(ent)+U-1)//U*U
        for t,j in ent: sids.append((j<<24)|t); sw.append(w[t*k+j]); stid.append(t*k+j)
        for _ in range(pad-len(ent)): sids.append((k<<24)|T); sw.append(0.0); stid.append(T*k)
        for b in range(start//U,(start+pad)//U): blocks[b]=sum(en[:e])
    return sids,sw,stid,blocks,len(sids)
random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
check_plan()
n=0; nd=0
for it in range(int(sys.argv[2]) if len(sys.argv)>2 else 300):
    E=random.choice([1,2,3,8,17,64,256,random.randint(1,300)])
    k=random.randint(1,min(E,32)); T=random.choice([1,2,7,8,31,32,33,random.randint(1,200),random.randint(100,700)])
    U=random.choice([1,2,16,32,64,random.randint(1,100)])
    kind=random.randint(0,3)
    ids=[]
    for t in range(T):
        if kind==0: row=random.sample(range(E),k)
        elif kind==1: row=[random.randint(-3,E+2) for _ in range(k)]   # dups + out of range
        elif kind==2: row=[(j+t)%k for j in range(k)]                  # hot
        else:
            row=random.sample(range(E),k); row=[x if random.random()>0.1 else random.choice([-1,E,E+5]) for x in row]
        ids+=row
    w=[random.random() for _ in range(T*k)]
    mask=None if random.random()<0.5 else [1 if random.random()<0.6 else 0 for _ in range(E)]
    if mask and random.random()<0.1: mask=[0]*E
    sms=random.choice([132,1,5])
    a=model(T,E,k,U,ids,w,mask,sms); b=ref(T,E,k,U,ids,w,mask)
    assert a[4]==b[4], ("total",T,E,k,U)
    assert a[0]==b[0] and a[1]==b[1] and a[2]==b[2] and a[3]==b[3], ("mismatch",T,E,k,U,kind)
    n+=1; nd+=a[5]
print("model ok", n, "cases,", nd, "with duplicates")
