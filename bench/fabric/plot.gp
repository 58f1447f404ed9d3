# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Plot of bench/fabric/run.sh results. Variables (gnuplot -e):
#   csv: system,bytes,avg_usec,busbw_MBps    png: output file
#   systems: names in csv, space-separated    link_MBps: measured link rate
#   nranks: ranks    ppn: ranks per host    plot_title
#   optional, for run.sh --coll (defaults: allreduce's): bw_title (the busbw
#   panel's title), x_title (what the size is), ina_bound (1: draw ina's
#   allreduce ceiling, 2(n-1)/n x link; 0: the link rate alone), ring_title
#   (what system ring runs)
if (!exists("bw_title")) bw_title = "bus bandwidth = bytes / time x 2(n-1)/n"
if (!exists("x_title")) x_title = "message size (bytes per rank)"
if (!exists("ina_bound")) ina_bound = 1
if (!exists("ring_title")) ring_title = "Open MPI tuned, ring algorithm"
set terminal pngcairo size 1400,600 font ",10" noenhanced
set output png
set datafile separator ","
set logscale x 2
set logscale y
set format x "%.0b%BB"
set format y "%g"
set xlabel x_title
set grid
set multiplot layout 1,2 title plot_title

# Rows of one system only; the header and the other systems' rows give NaN.
sel(sys, col) = (strcol(1) eq sys) ? column(col) : NaN
label(s) = s eq "tuned" ? "Open MPI tuned (default choice)" : \
           s eq "ring" ? ring_title : \
           s eq "ina1" ? "ina, agent 0 alone" : \
           s eq "grid" ? "ina's grid algorithm, no agent" : \
           s eq "ina_denied" ? "ina, agent denying: grid algorithm" : s
set style data linespoints

set title "latency"
set ylabel "avg time per call (us)"
set key top left
plot for [i = 1:words(systems)] csv using 2:(sel(word(systems, i), 3)) \
     lw 2 pt 4 + 2 * i title label(word(systems, i))

# Link-bound ceilings: a host algorithm (ring) reaches busbw = link rate;
# ina sends S up and S down, so busbw = 2(n-1)/n x link rate. For the other
# collectives (ina_bound 0) a one-hop ring (allgather, reduce_scatter_block)
# or pipelined chain (bcast, reduce) reaches the link rate too; ina does not
# not put fewer bytes on a host's link for them, so no second line.
set title bw_title
set ylabel "busbw (MB/s)"
set key bottom right
# The ceilings hold for one rank per host (ppn = 1) only: with more, ranks of
# a host share its link and part of the host algorithms' traffic stays local.
if (ppn == 1 && ina_bound) {
    plot for [i = 1:words(systems)] csv using 2:(sel(word(systems, i), 4)) \
         lw 2 pt 4 + 2 * i title label(word(systems, i)), \
         link_MBps with lines dt 2 lc rgb "gray40" title "measured link rate (host-algorithm bound)", \
         link_MBps * 2.0 * (nranks - 1) / nranks with lines dt 3 lc rgb "gray20" \
         title "ina bound, 2(n-1)/n x link"
} else {
    if (ppn == 1) {
        link_title = "measured link rate (one-hop ring or chain bound)"
    } else {
        link_title = "measured link rate"
    }
    plot for [i = 1:words(systems)] csv using 2:(sel(word(systems, i), 4)) \
         lw 2 pt 4 + 2 * i title label(word(systems, i)), \
         link_MBps with lines dt 2 lc rgb "gray40" title link_title
}
unset multiplot
