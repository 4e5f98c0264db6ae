# Synthetic stand-in for the non-large (< 10 MB) flows of the campus data-center trace of
# the ATCP paper (the trace is not public). The paper states: 80% of the flows are smaller
# than 10 KB, and 80% of the bytes are in flows larger than 10 MB. Together with the large
# flows of the scenarios (2% of all flows, uniform 10 MB .. 100 MB), this file gives:
#   all flows:  80% < 10 KB, 90% < 100 KB, 95% < 1 MB, 98% < 10 MB;
#   mean 1.30 MB per flow, 84.5% of the bytes in flows >= 10 MB.
# Conditioned on < 10 MB (this file) the cumulative probabilities are those divided by 0.98.
# Mean of this file (linear interpolation): 206,094 B.
# <size in bytes> <cumulative probability>
100       0
10000     0.816327
100000    0.918367
1000000   0.969388
10000000  1
