/* svg.c: SVG line plots written by opperf itself (sweep --plot): "nice" linear ticks, decades
 * on a log y axis and the measured values on a log x axis, one coloured polyline with circle
 * markers per series (each with a <title> tooltip), axis titles and a legend; text XML-escaped.
 * With ceilings (opf_svg_roof), a roofline chart: one grey line per memory level and the
 * compute peak, labelled on the chart, as Intel Advisor draws the cache-aware roofline. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/svg.h"

#define W 900
#define H 540
#define ML 90   /* margins: left, right, top, bottom */
#define MR 220
#define MT 50
#define MB 90

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                     "#9467bd", "#8c564b", "#e377c2", "#17becf"};

void opf_svg_escape(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&apos;", f); break;
    default:
      if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n') fputc(*s, f);
    }
  }
}

static int usable(double v, int log) { return isfinite(v) && (!log || v > 0); }

int opf_svg_drawn_points(const opf_svg_plot *p, int s) {
  int n = 0;
  const opf_svg_series *se = &p->series[s];
  for (int i = 0; i < se->n; i++) n += usable(se->x[i], p->xlog) && usable(se->y[i], p->ylog);
  return n;
}

typedef struct axis {
  int log;
  double lo, hi;      /* data range in axis units (log10 when log) */
  double px0, px1;    /* pixel range */
} axis;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double tr(double v, int log) { return log ? log10(v) : v; }
static double to_px(const axis *a, double v) {
  double t = tr(v, a->log);
  return a->px0 + (t - a->lo) / (a->hi - a->lo) * (a->px1 - a->px0);
}

static double nice_step(double range) {
  double raw = range / 6, mag = pow(10, floor(log10(raw))), f = raw / mag;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

static void fmt_num(double v, char *buf, size_t n) {
  double a = fabs(v);
  if (v == 0) snprintf(buf, n, "0");
  else if (a >= 1e6 || a < 1e-3) snprintf(buf, n, "%.3g", v);
  else if (a >= 100) snprintf(buf, n, "%.0f", v);
  else snprintf(buf, n, "%.3g", v);
}

/* Pick the range (axis units) from the data, padded; log axes snap to decades. */
static void set_range(axis *a, double mn, double mx) {
  if (!(mn <= mx)) mn = 0, mx = a->log ? 1 : 1;
  double lo = tr(mn, a->log), hi = tr(mx, a->log);
  if (a->log) {
    lo = floor(lo);
    hi = ceil(hi);
    if (hi <= lo) hi = lo + 1;
  } else {
    if (lo > 0 && lo < 0.5 * hi) lo = 0;
    if (hi == lo) hi = lo + (lo ? fabs(lo) * 0.5 : 1), lo -= lo ? fabs(lo) * 0.5 : 0;
    double st = nice_step(hi - lo);
    lo = floor(lo / st) * st;
    hi = ceil(hi / st) * st;
  }
  a->lo = lo;
  a->hi = hi;
}

/* The ceilings of a roofline chart (both axes log), clipped to the plot area: each level's
 * slanted line from the left edge (or the bottom) to its ridge point, then the cap. */
static void draw_roofs(FILE *f, const opf_svg_plot *p, const axis *ax, const axis *ay) {
  double x0 = pow(10, ax->lo), x1 = pow(10, ax->hi), y0 = pow(10, ay->lo), y1 = pow(10, ay->hi);
  double cap = 0;
  fputs("<g class=\"roofs\" fill=\"none\" stroke-width=\"1.5\">\n", f);
  for (int k = 0; k < p->n_roofs; k++) {
    const opf_svg_roof *r = &p->roofs[k];
    if (!(r->slope > 0) || !isfinite(r->slope)) continue;
    double xa = fmax(x0, y0 / r->slope), xr = r->cap > 0 ? r->cap / r->slope : x1;
    xr = fmin(xr, fmin(x1, y1 / r->slope));
    if (!(xa < xr)) continue;
    if (r->cap > cap) cap = r->cap;
    const char *dash = k % 3 == 0 ? "" : k % 3 == 1 ? " stroke-dasharray=\"6 3\"" : " stroke-dasharray=\"2 3\"";
    double pxa = to_px(ax, xa), pya = to_px(ay, r->slope * xa), pxr = to_px(ax, xr), pyr = to_px(ay, r->slope * xr);
    fprintf(f, "<polyline stroke=\"#777777\"%s points=\"%.1f,%.1f %.1f,%.1f", dash, pxa, pya, pxr, pyr);
    if (r->cap > 0 && xr < x1) fprintf(f, " %.1f,%.1f", to_px(ax, x1), to_px(ay, r->cap));
    fputs("\"><title>", f);
    opf_svg_escape(f, r->label);
    fputs("</title></polyline>\n", f);
    /* the label along the slanted part, near its lower end */
    double ang = atan2(pyr - pya, pxr - pxa) * 180 / M_PI, lx = pxa + 8, ly = pya + (pyr - pya) / (pxr - pxa) * 8 - 5;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555555\" stroke=\"none\" font-size=\"11\" "
               "transform=\"rotate(%.1f %.1f %.1f)\">", lx, ly, ang, lx, ly);
    opf_svg_escape(f, r->label);
    fputs("</text>\n", f);
  }
  if (cap > 0 && cap < y1 && p->cap_label) {
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" fill=\"#555555\" stroke=\"none\" font-size=\"11\" "
               "text-anchor=\"end\">", W - MR - 6, to_px(ay, cap) - 5);
    opf_svg_escape(f, p->cap_label);
    fputs("</text>\n", f);
  }
  fputs("</g>\n", f);
}

int opf_svg_render(const opf_svg_plot *p, char **out, size_t *len, opf_err *err) {
  *out = NULL;
  *len = 0;
  int cat = p->xcat && p->n_xcat > 0;
  axis ax = {.log = p->xlog && !cat, .px0 = ML, .px1 = W - MR};
  axis ay = {.log = p->ylog, .px0 = H - MB, .px1 = MT};
  double xmn = INFINITY, xmx = -INFINITY, ymn = INFINITY, ymx = -INFINITY;
  for (int s = 0; s < p->n_series; s++)
    for (int i = 0; i < p->series[s].n; i++) {
      double x = p->series[s].x[i], y = p->series[s].y[i];
      if (!usable(x, ax.log) || !usable(y, ay.log)) continue;
      xmn = fmin(xmn, x), xmx = fmax(xmx, x), ymn = fmin(ymn, y), ymx = fmax(ymx, y);
    }
  int roofs = p->n_roofs > 0 && p->roofs && ax.log && ay.log;
  for (int k = 0; roofs && k < p->n_roofs; k++) { /* every ridge point and the cap on the chart */
    const opf_svg_roof *r = &p->roofs[k];
    if (!(r->slope > 0) || !(r->cap > 0)) continue;
    xmn = fmin(xmn, r->cap / r->slope / 2), xmx = fmax(xmx, 2 * r->cap / r->slope);
    ymx = fmax(ymx, 1.5 * r->cap), ymn = fmin(ymn, r->cap / 1e3);
  }
  if (cat) {
    ax.lo = -0.5;
    ax.hi = p->n_xcat - 0.5;
  } else if (ax.log && xmn < xmx && !roofs) { /* the data's own span, padded: decades would waste room */
    double lo = log10(xmn), hi = log10(xmx), pad = 0.04 * (hi - lo);
    ax.lo = lo - pad;
    ax.hi = hi + pad;
  } else {
    set_range(&ax, xmn, xmx);
  }
  set_range(&ay, ymn, ymx);

  FILE *f = open_memstream(out, len);
  if (!f) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
             "font-family=\"sans-serif\" font-size=\"12\">\n"
             "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
          W, H, W, H, W, H);
  fputs("<text x=\"", f);
  fprintf(f, "%d\" y=\"%d\" font-size=\"15\" font-weight=\"bold\">", ML, MT - 20);
  opf_svg_escape(f, p->title);
  fputs("</text>\n<g class=\"grid\" stroke=\"#dddddd\" stroke-width=\"1\">\n", f);
  /* y ticks */
  char lab[64];
  double ystep = ay.log ? 1 : nice_step(ay.hi - ay.lo);
  int nyt = 0;
  double yt[64];
  for (double t = ay.lo; t <= ay.hi + 1e-9 * fabs(ystep) && nyt < 64; t += ystep) yt[nyt++] = t;
  for (int i = 0; i < nyt; i++) {
    double py = ay.px0 + (yt[i] - ay.lo) / (ay.hi - ay.lo) * (ay.px1 - ay.px0);
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", ML, py, W - MR, py);
  }
  /* x ticks */
  double xt[256];
  int nxt = 0;
  if (cat) {
    for (int i = 0; i < p->n_xcat && nxt < 256; i++) xt[nxt++] = i;
  } else if (ax.log && xmn < xmx && !roofs) {
    /* Ticks at the measured x values (a geometric sweep's own steps), at most about 11. */
    double xv[256];
    int nv = 0;
    for (int s = 0; s < p->n_series; s++)
      for (int i = 0; i < p->series[s].n && nv < 256; i++) {
        double x = p->series[s].x[i];
        int seen = !usable(x, 1);
        for (int k = 0; k < nv && !seen; k++) seen = xv[k] == x;
        if (!seen) xv[nv++] = x;
      }
    qsort(xv, (size_t)nv, sizeof *xv, cmp_double);
    int every = (nv + 10) / 11;
    for (int i = 0; i < nv; i += every) xt[nxt++] = log10(xv[i]);
  } else {
    double xstep = ax.log ? 1 : nice_step(ax.hi - ax.lo);
    if (ax.log && ax.hi - ax.lo > 12) xstep = ceil((ax.hi - ax.lo) / 12);
    for (double t = ax.lo; t <= ax.hi + 1e-9 * fabs(xstep) && nxt < 256; t += xstep) xt[nxt++] = t;
  }
  for (int i = 0; i < nxt; i++) {
    double px = ax.px0 + (xt[i] - ax.lo) / (ax.hi - ax.lo) * (ax.px1 - ax.px0);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", px, MT, px, H - MB);
  }
  fputs("</g>\n", f);
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"black\"/>\n", ML, MT,
          W - ML - MR, H - MT - MB);
  fputs("<g class=\"ticks\" fill=\"black\">\n", f);
  for (int i = 0; i < nyt; i++) {
    double py = ay.px0 + (yt[i] - ay.lo) / (ay.hi - ay.lo) * (ay.px1 - ay.px0);
    fmt_num(ay.log ? pow(10, yt[i]) : yt[i], lab, sizeof lab);
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", ML - 6, py + 4, lab);
  }
  for (int i = 0; i < nxt; i++) {
    double px = ax.px0 + (xt[i] - ax.lo) / (ax.hi - ax.lo) * (ax.px1 - ax.px0);
    if (cat) {
      fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"end\" transform=\"rotate(-30 %.1f %d)\">", px, H - MB + 16,
              px, H - MB + 16);
      opf_svg_escape(f, p->xcat[i]);
      fputs("</text>\n", f);
      continue;
    }
    double v = ax.log ? pow(10, xt[i]) : xt[i], l2 = log2(v);
    if (ax.log && v >= 1024 && fabs(l2 - round(l2)) < 1e-9) snprintf(lab, sizeof lab, "2^%d", (int)round(l2));
    else if (ax.log && fabs(v - round(v)) < 1e-6 * v && v < 1e7) snprintf(lab, sizeof lab, "%.0f", round(v));
    else fmt_num(v, lab, sizeof lab);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", px, H - MB + 18, lab);
  }
  fputs("</g>\n", f);
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"13\">", (ML + W - MR) / 2, H - 20);
  opf_svg_escape(f, p->xlabel);
  fputs(ax.log ? " (log scale)" : "", f);
  fprintf(f, "</text>\n<text x=\"20\" y=\"%d\" text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 20 %d)\">",
          (MT + H - MB) / 2, (MT + H - MB) / 2);
  opf_svg_escape(f, p->ylabel);
  fputs(ay.log ? " (log scale)" : "", f);
  fputs("</text>\n", f);
  if (roofs) draw_roofs(f, p, &ax, &ay);
  for (int s = 0; s < p->n_series; s++) {
    const opf_svg_series *se = &p->series[s];
    const char *col = colors[s % (int)(sizeof colors / sizeof colors[0])];
    fprintf(f, "<g class=\"series\" id=\"series%d\">\n<title>", s);
    opf_svg_escape(f, se->label);
    fprintf(f, "</title>\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
    int first = 1;
    for (int i = 0; i < se->n; i++) {
      if (!usable(se->x[i], ax.log) || !usable(se->y[i], ay.log)) continue;
      fprintf(f, "%s%.1f,%.1f", first ? "" : " ", to_px(&ax, se->x[i]), to_px(&ay, se->y[i]));
      first = 0;
    }
    fputs("\"/>\n", f);
    for (int i = 0; i < se->n; i++) {
      if (!usable(se->x[i], ax.log) || !usable(se->y[i], ay.log)) continue;
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>", to_px(&ax, se->x[i]),
              to_px(&ay, se->y[i]), col);
      opf_svg_escape(f, se->label);
      if (cat) {
        fputs(": ", f);
        opf_svg_escape(f, p->xcat[(int)se->x[i]]);
      } else {
        fmt_num(se->x[i], lab, sizeof lab);
        fprintf(f, ": x=%s", lab);
      }
      fmt_num(se->y[i], lab, sizeof lab);
      fprintf(f, ", y=%s</title></circle>\n", lab);
    }
    fputs("</g>\n", f);
    /* legend */
    int ly = MT + 10 + 22 * s;
    fprintf(f, "<g class=\"legend\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>"
               "<circle cx=\"%d\" cy=\"%d\" r=\"3.5\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">",
            W - MR + 15, ly, W - MR + 45, ly, col, W - MR + 30, ly, col, W - MR + 52, ly + 4);
    opf_svg_escape(f, se->label);
    fputs("</text></g>\n", f);
  }
  fputs("</svg>\n", f);
  if (fclose(f)) {
    free(*out);
    *out = NULL;
    return opf_err_set(err, OPF_ENOMEM, "cannot render the plot");
  }
  return OPF_OK;
}
