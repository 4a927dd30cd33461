#!/usr/bin/env python3
"""The instructions of an ncu source-page CSV matching a regular expression, with their execution counts,
samples and the next instruction's (a wait's branch holds its long-scoreboard samples; PERF_NOTES v38.1):
    python3 ncu_waits.py K-sass.csv "TRYWAIT|BAR.SYNC"
"""
import csv, sys, re
def rows(p):
    t=list(csv.reader(open(p)))
    h=t[1]; return [dict(zip(h,l)) for l in t[2:] if len(l)==len(h)]
def num(x):
    try: return float(x.replace(',',''))
    except: return 0.0
reasons=['stall_wait','stall_selected','stall_not_selected','stall_dispatch','stall_barrier','stall_long_sb','stall_mio','stall_short_sb','stall_math','stall_no_inst','stall_branch_resolving','stall_sleep']
p=sys.argv[1]; pat=re.compile(sys.argv[2])
R=rows(p); tot=sum(num(r['# Samples']) for r in R)
prev=None
for i,r in enumerate(R):
    if pat.search(r['Source']):
        s=num(r['# Samples']); nxt=R[i+1] if i+1<len(R) else None
        top=sorted(((num(r[k]),k[6:]) for k in reasons), reverse=True)[:2]
        ns=num(nxt['# Samples']) if nxt else 0
        print('%s exec %8d  %5d (%.1f%%) %-60s | next %-30s %5d (%.1f%%) %s'%(r['Address'][-5:], num(r['Instructions Executed']), s, 100*s/tot, r['Source'].strip()[:60], nxt['Source'].strip()[:30], ns, 100*ns/tot, ' '.join('%s:%d'%(k,num(nxt[k])) for k in ['stall_long_sb','stall_barrier'] )))
