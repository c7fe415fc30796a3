/* svg.h: a small self-contained SVG line-plot writer (no plotting package): one polyline
 * with markers per series, linear or log10 axes, tick labels, axis titles with units, a legend.
 * Used by `opperf sweep --plot`; with ceilings, the cache-aware roofline chart
 * (--plot-metric roofline). */
#ifndef OPPERF_SVG_H
#define OPPERF_SVG_H

#include <stddef.h>
#include <stdio.h>

#include "opperf/error.h"

typedef struct opf_svg_series {
  const char *label;    /* legend text */
  int n;
  const double *x, *y;  /* points; a non-finite y (or <= 0 on a log axis) is left out */
} opf_svg_series;

/* A roofline ceiling on log-log axes: y = slope * x up to cap, flat at cap after (the ridge
 * point x = cap / slope). cap 0: no flat part. */
typedef struct opf_svg_roof {
  const char *label;    /* written along the slanted part ("L1 250 GB/s") */
  double slope, cap;
} opf_svg_roof;

typedef struct opf_svg_plot {
  const char *title;
  const char *xlabel, *ylabel;  /* with units, e.g. "rows (elements)", "time per element (ns)" */
  int xlog, ylog;               /* log10 axes */
  /* Categorical x (explicit shape lists): x values are 0..n_xcat-1 and these are the ticks. */
  const char *const *xcat;
  int n_xcat;
  int n_series;
  const opf_svg_series *series;
  /* Roofline chart (log x and y): ceilings drawn under the series, decade ticks on x, the axes
   * stretched to show every ridge point and the cap; cap_label written on the flat part. */
  int n_roofs;
  const opf_svg_roof *roofs;
  const char *cap_label;
} opf_svg_plot;

/* Render the plot as a standalone SVG document into a malloc'd buffer (*out, *len). */
int opf_svg_render(const opf_svg_plot *p, char **out, size_t *len, opf_err *err);
/* Number of points of series s the plot draws (the ones it can place on its axes). */
int opf_svg_drawn_points(const opf_svg_plot *p, int s);

/* Write s with XML's special characters escaped (and control characters dropped). */
void opf_svg_escape(FILE *f, const char *s);

#endif
