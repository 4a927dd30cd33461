#!/usr/bin/env python3
"""Per execution-count group of an ncu source-page CSV (tools/ncu_stalls.py --by-count), the samples of
each opcode and their stall reasons, as shares of all samples (PERF_NOTES v38.1):
    python3 ncu_groups.py K-sass.csv [OTHER-sass.csv ...]"""
import csv, sys, collections
def rows(p):
    t=list(csv.reader(open(p)))
    h=t[1]; return [dict(zip(h,l)) for l in t[2:] if len(l)==len(h)]
def num(x):
    try: return float(x.replace(',',''))
    except: return 0.0
def op(src):
    s=src.strip()
    if s.startswith('@'): s=s.split(None,1)[1]
    return s.split()[0].split('.')[0] if s else ''
reasons=['stall_wait','stall_selected','stall_not_selected','stall_dispatch','stall_barrier','stall_long_sb','stall_mio','stall_short_sb','stall_math','stall_no_inst','stall_branch_resolving','stall_sleep']
for p in sys.argv[1:]:
    R=rows(p); tot=sum(num(r['# Samples']) for r in R)
    cnt=collections.Counter()
    for r in R: cnt[num(r['Instructions Executed'])]+=num(r['# Samples'])
    print('==',p,'samples',tot)
    for c,s in cnt.most_common(4):
        G=[r for r in R if num(r['Instructions Executed'])==c]
        by=collections.defaultdict(lambda: collections.Counter())
        for r in G:
            o=op(r['Source']); by[o]['n']+=1; by[o]['s']+=num(r['# Samples'])
            for k in reasons: by[o][k]+=num(r[k])
        print('  exec %d: %d instrs, %.1f%% samples'%(c,len(G),100*s/tot))
        for o,d in sorted(by.items(), key=lambda x:-x[1]['s'])[:14]:
            print('    %-12s n=%3d samples %5.1f%%  '%(o,d['n'],100*d['s']/tot)+' '.join('%s %.1f'%(k[6:],100*d[k]/tot) for k in reasons if d[k]/tot>0.004))
