# Plot of bench/fabric/run.sh results. Variables (gnuplot -e):
#   csv: system,bytes,avg_usec,busbw_MBps    png: output file
#   link_MBps: measured link rate    nranks: ranks    plot_title
set terminal pngcairo size 1400,600 font ",10" noenhanced
set output png
set datafile separator ","
set logscale x 2
set logscale y
set format x "%.0b%BB"
set format y "%g"
set xlabel "message size (bytes per rank)"
set grid
set multiplot layout 1,2 title plot_title

# Rows of one system only; the header and the other system's rows give NaN.
sel(sys, col) = (strcol(1) eq sys) ? column(col) : NaN

set title "latency"
set ylabel "avg time per call (us)"
set key top left
plot csv using 2:(sel("tuned", 3)) with linespoints lw 2 pt 7 title "Open MPI tuned", \
     csv using 2:(sel("ina", 3)) with linespoints lw 2 pt 5 title "ina"

# Link-bound ceilings: a host algorithm (ring) reaches busbw = link rate;
# ina sends S up and S down, so busbw = 2(n-1)/n x link rate.
set title "bus bandwidth = bytes / time x 2(n-1)/n"
set ylabel "busbw (MB/s)"
set key bottom right
plot csv using 2:(sel("tuned", 4)) with linespoints lw 2 pt 7 title "Open MPI tuned", \
     csv using 2:(sel("ina", 4)) with linespoints lw 2 pt 5 title "ina", \
     link_MBps with lines dt 2 lc rgb "gray40" title "measured link rate (host-algorithm bound)", \
     link_MBps * 2.0 * (nranks - 1) / nranks with lines dt 3 lc rgb "gray20" title "ina bound, 2(n-1)/n x link"
unset multiplot
