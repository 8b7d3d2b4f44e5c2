/*
 * svg: line charts of tuning curves as standalone SVG 1.1, written directly
 * into a string buffer (no library). A document holds one or more charts
 * side by side; each has a title, a frame, round-number ticks with grid lines
 * and labels on a linear y axis from 0 and a linear or logarithmic x axis,
 * axis titles, one <path> per series (clipped to the plot area) with a dot
 * at its last point, and a legend in the corner of the plot where it hides
 * the fewest line segments (lower right first: best-so-far curves rise
 * early and then level off). Series are told apart by colour
 * (the Okabe-Ito palette, with grey for its yellow) and by dash pattern, so
 * that neighbouring series differ in greyscale too. Contracts are in
 * report.h.
 */
#include "report.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Layout of one chart, in pixels from its top left corner. */
#define M_LEFT 72
#define M_RIGHT 24
#define M_TOP 42
#define M_BOTTOM 56
#define FONT "sans-serif"
#define LEGEND_ROW 16
#define LEGEND_SWATCH 30
#define LEGEND_MAXCHARS 60
#define CHAR_W 6.8  /* average advance of a 12px sans-serif character, generously */

static const char *const aColour[] = {
	"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000", "#7F7F7F",
};
static const char *const aDash[] = {
	NULL, "9,4", "2,3", "9,3,2,3", "16,4,3,4", "4,4", "12,3,2,3,2,3", "1,6",
};

/* Colour and dash of series i: each of the first eight series has its own
 * colour and its own dash pattern (so they differ in greyscale too); the
 * dash shifts after each round of colours, giving 64 combinations. */
static const char *series_colour(int i)
{
	return aColour[i % ArraySize(aColour)];
}

static const char *series_dash(int i)
{
	return aDash[(i + i / ArraySize(aColour)) % ArraySize(aDash)];
}

void rp_xml_escape(tk_sb *sb, const char *text)
{
	for (const char *p = text ? text : ""; *p; p++) {
		unsigned char c = (unsigned char)*p;
		switch (c) {
		case '&': tk_sb_puts(sb, "&amp;"); break;
		case '<': tk_sb_puts(sb, "&lt;"); break;
		case '>': tk_sb_puts(sb, "&gt;"); break;
		case '"': tk_sb_puts(sb, "&quot;"); break;
		case '\'': tk_sb_puts(sb, "&apos;"); break;
		default:
			tk_sb_putc(sb, c < 0x20 && c != '\t' && c != '\n' ? '?' : (char)c);
		}
	}
}

/* ---- axes ------------------------------------------------------------------ */

double rp_ticks(double lo, double hi, int max, double *aTick, int *n)
{
	assert(lo < hi && max >= 2);
	double raw = (hi - lo) / (max - 1);
	double mag = pow(10, floor(log10(raw)));
	double step = 10 * mag;
	static const double aMul[] = { 1, 2, 5, 10 };
	for (int i = 0; i < ArraySize(aMul); i++)
		if (aMul[i] * mag >= raw * (1 - 1e-12)) {
			step = aMul[i] * mag;
			break;
		}
	*n = 0;
	for (double k = ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9 && *n < max; k++)
		aTick[(*n)++] = k * step == 0 ? 0 : k * step;
	return step;
}

/* A tick label for value v on an axis of ticks step apart. */
static void tick_label(char *buf, size_t size, double v, double step)
{
	if (fabs(v) >= 1e6 || (v != 0 && fabs(v) < 1e-4))
		snprintf(buf, size, "%.4g", v);
	else {
		int nDec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
		snprintf(buf, size, "%.*f", nDec, v);
	}
}

/* One axis: its data range and how values map to pixels. */
typedef struct axis {
	double lo, hi;   /* axis range (log: positive) */
	int log;
	double p0, p1;   /* pixel positions of lo and hi */
} axis;

static double axis_map(const axis *a, double v)
{
	double t = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo))
	                  : (v - a->lo) / (a->hi - a->lo);
	return a->p0 + t * (a->p1 - a->p0);
}

static int point_ok(const rp_chart *c, const rp_series *s, int i)
{
	return isfinite(s->x[i]) && isfinite(s->y[i]) && s->y[i] >= 0 && (!c->logx || s->x[i] > 0);
}

/* Data ranges of a chart; returns the number of drawable points. */
static int chart_range(const rp_chart *c, double *xmin, double *xmax, double *ymax)
{
	int n = 0;
	*xmin = INFINITY;
	*xmax = -INFINITY;
	*ymax = 0;
	for (int k = 0; k < c->nseries; k++) {
		const rp_series *s = &c->series[k];
		for (int i = 0; i < s->n; i++) {
			if (!point_ok(c, s, i))
				continue;
			n++;
			if (s->x[i] < *xmin)
				*xmin = s->x[i];
			if (s->x[i] > *xmax)
				*xmax = s->x[i];
			if (s->y[i] > *ymax)
				*ymax = s->y[i];
		}
		if (s->step && isfinite(s->xend) && s->xend > *xmax && (!c->logx || s->xend > 0))
			*xmax = s->xend;
	}
	return n;
}

static void put_text(tk_sb *sb, double x, double y, const char *anchor, int size,
                     const char *extra, const char *text)
{
	tk_sb_printf(sb, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\"%s%s>",
	             x, y, anchor, size, extra ? " " : "", extra ? extra : "");
	rp_xml_escape(sb, text);
	tk_sb_puts(sb, "</text>\n");
}

/* A linear axis from 0 (or the data's negative minimum) to a round number
 * at or above the data plus the fraction room, at most 8 ticks. */
static void axis_linear(axis *a, double dmin, double dmax, double room, double *aTick,
                        int *nTick, double *step)
{
	double lo = dmin < 0 ? dmin : 0, hi = dmax > lo ? dmax : lo + 1;
	hi = lo + (hi - lo) * (1 + room);
	*step = rp_ticks(lo, hi, 7, aTick, nTick);
	a->lo = floor(lo / *step + 1e-9) * *step;
	a->hi = ceil(hi / *step - 1e-9) * *step;
	a->log = 0;
	rp_ticks(a->lo, a->hi, 8, aTick, nTick);
}

/* A logarithmic axis from the decade at or below dmin to the one at or
 * above dmax (at least one decade). */
static void axis_log(axis *a, double dmin, double dmax)
{
	if (!(dmin > 0))
		dmin = 1;
	if (!(dmax > dmin))
		dmax = dmin * 10;
	a->lo = pow(10, floor(log10(dmin) + 1e-9));
	a->hi = pow(10, ceil(log10(dmax) - 1e-9));
	if (a->hi <= a->lo)
		a->hi = a->lo * 10;
	a->log = 1;
}

/* Ticks, grid lines and labels of the x axis. */
static void draw_xaxis(tk_sb *sb, const axis *ax, const double *aTick, int nTick, double step,
                       double yTop, double yBot)
{
	char lab[40];
	if (!ax->log) {
		for (int i = 0; i < nTick; i++) {
			double x = axis_map(ax, aTick[i]);
			tk_sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>\n",
			             x, yTop, x, yBot);
			tk_sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
			             x, yBot, x, yBot + 5);
			tick_label(lab, sizeof lab, aTick[i], step);
			put_text(sb, x, yBot + 19, "middle", 12, NULL, lab);
		}
		return;
	}
	int nDecade = (int)lround(log10(ax->hi / ax->lo));
	for (int d = 0; d <= nDecade; d++) {
		double base = ax->lo * pow(10, d);
		for (int m = 1; m <= 9; m++) {
			double v = base * m;
			if (v > ax->hi * (1 + 1e-9) || (d == nDecade && m > 1))
				break;
			double x = axis_map(ax, v);
			int major = m == 1, labelled = major || (nDecade <= 2 && (m == 2 || m == 5));
			tk_sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n",
			             x, yTop, x, yBot, major ? "#e3e3e3" : "#f2f2f2");
			tk_sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
			             x, yBot, x, yBot + (major ? 5 : 3));
			if (labelled) {
				snprintf(lab, sizeof lab, "%g", v);
				put_text(sb, x, yBot + 19, "middle", 12, NULL, lab);
			}
		}
	}
}

/* A series in pixels: vertices with a flag for the start of a subpath. */
typedef struct polyline {
	int n;
	double *x, *y;
	unsigned char *move;
} polyline;

static void poly_free(polyline *pl)
{
	free(pl->x);
	free(pl->y);
	free(pl->move);
	memset(pl, 0, sizeof *pl);
}

/* The vertices of series k: a polyline through the drawable points, or
 * steps holding each y until the next x (and the last until xend); a new
 * subpath after skipped points. Returns -1 on out of memory. */
static int series_poly(const rp_chart *c, int k, const axis *ax, const axis *ay, polyline *pl)
{
	const rp_series *s = &c->series[k];
	int cap = 2 * s->n + 2, started = 0, gap = 0;
	double lastY = 0;
	pl->n = 0;
	pl->x = malloc(sizeof *pl->x * (size_t)cap);
	pl->y = malloc(sizeof *pl->y * (size_t)cap);
	pl->move = malloc((size_t)cap);
	if (!pl->x || !pl->y || !pl->move) {
		poly_free(pl);
		return -1;
	}
	for (int i = 0; i < s->n; i++) {
		if (!point_ok(c, s, i)) {
			gap = started;
			continue;
		}
		double px = axis_map(ax, s->x[i]), py = axis_map(ay, s->y[i]);
		if (started && !gap && s->step) {
			pl->x[pl->n] = px;
			pl->y[pl->n] = lastY;
			pl->move[pl->n++] = 0;
		}
		pl->x[pl->n] = px;
		pl->y[pl->n] = py;
		pl->move[pl->n++] = !started || gap;
		started = 1;
		gap = 0;
		lastY = py;
	}
	if (started && s->step && isfinite(s->xend) && s->xend > s->x[s->n - 1] &&
	    (!c->logx || s->xend > 0)) {
		pl->x[pl->n] = axis_map(ax, s->xend);
		pl->y[pl->n] = lastY;
		pl->move[pl->n++] = 0;
	}
	return 0;
}

/* Does the segment (x0,y0)-(x1,y1) meet the rectangle? (Liang-Barsky) */
static int seg_hits(double x0, double y0, double x1, double y1, double rx0, double ry0,
                    double rx1, double ry1)
{
	double t0 = 0, t1 = 1, dx = x1 - x0, dy = y1 - y0;
	double p[4] = { -dx, dx, -dy, dy }, q[4] = { x0 - rx0, rx1 - x0, y0 - ry0, ry1 - y0 };
	for (int i = 0; i < 4; i++) {
		if (p[i] == 0) {
			if (q[i] < 0)
				return 0;
			continue;
		}
		double t = q[i] / p[i];
		if (p[i] < 0) {
			if (t > t1)
				return 0;
			if (t > t0)
				t0 = t;
		} else {
			if (t < t0)
				return 0;
			if (t < t1)
				t1 = t;
		}
	}
	return 1;
}

/* How many segments and points of the polylines a box at (x, y) hides. */
static int box_hits(const polyline *aPl, int nPl, double x, double y, double w, double h)
{
	int n = 0;
	for (int k = 0; k < nPl; k++)
		for (int i = 0; i < aPl[k].n; i++) {
			int first = i == 0 || aPl[k].move[i];
			double x0 = first ? aPl[k].x[i] : aPl[k].x[i - 1];
			double y0 = first ? aPl[k].y[i] : aPl[k].y[i - 1];
			n += seg_hits(x0, y0, aPl[k].x[i], aPl[k].y[i], x, y, x + w, y + h);
		}
	return n;
}

/* The size of a chart's legend: rows shown (the last may say how many
 * series are left out) and the box in pixels. */
typedef struct legend {
	int nShow, nRow;
	double w, h;
	char more[48];
} legend;

static void legend_layout(const rp_chart *c, double yTop, double yBot, legend *L)
{
	int maxRows = (int)((yBot - yTop - 24) / LEGEND_ROW);
	size_t maxLen = 0;
	memset(L, 0, sizeof *L);
	if (c->nseries == 0 || maxRows < 1)
		return;
	L->nShow = c->nseries;
	if (L->nShow > maxRows)
		L->nShow = maxRows - 1;
	for (int k = 0; k < L->nShow; k++) {
		size_t l = strlen(c->series[k].label ? c->series[k].label : "");
		if (l > maxLen)
			maxLen = l;
	}
	if (maxLen > LEGEND_MAXCHARS)
		maxLen = LEGEND_MAXCHARS;
	snprintf(L->more, sizeof L->more, "... and %d more", c->nseries - L->nShow);
	if (L->nShow < c->nseries && strlen(L->more) > maxLen)
		maxLen = strlen(L->more);
	L->nRow = L->nShow + (L->nShow < c->nseries);
	L->w = 8 + LEGEND_SWATCH + 8 + maxLen * CHAR_W + 8;
	L->h = L->nRow * LEGEND_ROW + 10;
}

/* The corner of the plot area where the legend hides the fewest segments,
 * trying lower right, upper left, upper right, lower left in turn; returns
 * that number of segments. */
static int legend_place(const rp_chart *c, const legend *L, const polyline *aPl, double x0,
                        double x1, double yTop, double yBot, double *px, double *py)
{
	double aCx[4] = { x1 - 10 - L->w, x0 + 10, x1 - 10 - L->w, x0 + 10 };
	double aCy[4] = { yBot - 10 - L->h, yTop + 10, yTop + 10, yBot - 10 - L->h };
	int best = -1;
	for (int i = 0; i < 4 && best != 0; i++) {
		int hits = box_hits(aPl, c->nseries, aCx[i], aCy[i], L->w, L->h);
		if (best < 0 || hits < best) {
			best = hits;
			*px = aCx[i];
			*py = aCy[i];
		}
	}
	return best;
}

static void draw_legend(tk_sb *sb, const rp_chart *c, const legend *L, double x, double y)
{
	if (L->nRow == 0)
		return;
	tk_sb_printf(sb, "<g font-size=\"12\">\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\""
	             " fill=\"#ffffff\" fill-opacity=\"0.9\" stroke=\"#999\"/>\n", x, y, L->w, L->h);
	for (int k = 0; k < L->nRow; k++) {
		double yy = y + 5 + LEGEND_ROW * (k + 0.5);
		if (k == L->nShow) {
			put_text(sb, x + 8, yy + 4, "start", 12, NULL, L->more);
			break;
		}
		const char *dash = series_dash(k), *label = c->series[k].label;
		char buf[LEGEND_MAXCHARS + 1];
		if (!label)
			label = "";
		if (strlen(label) > LEGEND_MAXCHARS) {
			snprintf(buf, sizeof buf, "%.*s...", LEGEND_MAXCHARS - 3, label);
			label = buf;
		}
		tk_sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\""
		             " stroke-width=\"2.5\"%s%s%s/>\n", x + 8, yy, x + 8 + LEGEND_SWATCH, yy,
		             series_colour(k), dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
		             dash ? "\"" : "");
		put_text(sb, x + 8 + LEGEND_SWATCH + 8, yy + 4, "start", 12, NULL, label);
	}
	tk_sb_puts(sb, "</g>\n");
}

/* Series k as one <path> (clipped to the plot), and a dot at its last
 * drawn data point. */
static void draw_series(tk_sb *sb, const rp_chart *c, int k, const polyline *pl,
                        const axis *ax, const axis *ay, int iChart)
{
	const rp_series *s = &c->series[k];
	const char *dash = series_dash(k);
	tk_sb_printf(sb, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-linejoin=\"round\""
	             "%s%s%s clip-path=\"url(#tk-plot%d)\" d=\"", series_colour(k),
	             dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "", iChart);
	for (int i = 0; i < pl->n; i++)
		tk_sb_printf(sb, "%s%c%.1f,%.1f", i ? " " : "", pl->move[i] ? 'M' : 'L', pl->x[i],
		             pl->y[i]);
	if (!pl->n) /* nothing to draw: a moveto alone renders nothing */
		tk_sb_printf(sb, "M%.1f,%.1f", ax->p0, ay->p0);
	tk_sb_puts(sb, "\"/>\n");
	for (int i = s->n - 1; i >= 0; i--)
		if (point_ok(c, s, i)) {
			tk_sb_printf(sb, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\""
			             " clip-path=\"url(#tk-plot%d)\"/>\n", axis_map(ax, s->x[i]),
			             axis_map(ay, s->y[i]), series_colour(k), iChart);
			break;
		}
}

/* The pixel polylines of every series of c into aPl (freed first). */
static int chart_polys(const rp_chart *c, const axis *ax, const axis *ay, polyline *aPl)
{
	for (int k = 0; k < c->nseries; k++) {
		poly_free(&aPl[k]);
		if (series_poly(c, k, ax, ay, &aPl[k]))
			return -1;
	}
	return 0;
}

static void draw_chart(tk_sb *sb, const rp_chart *c, int iChart, double ox, int width, int height)
{
	double xmin, xmax, ymax, aXTick[16], aYTick[16], xstep = 1, ystep, lx = 0, ly = 0;
	int nX = 0, nY, nPoint = chart_range(c, &xmin, &xmax, &ymax);
	double x0 = ox + M_LEFT, x1 = ox + width - M_RIGHT, yTop = M_TOP, yBot = height - M_BOTTOM;
	axis ax, ay;
	legend L;
	char lab[40];
	polyline *aPl = calloc((size_t)c->nseries + 1, sizeof *aPl);

	if (!aPl) {
		sb->oom = 1;
		return;
	}
	if (!nPoint) {
		xmin = c->logx ? 1 : 0;
		xmax = c->logx ? 10 : 1;
		ymax = 1;
	}
	if (c->logx)
		axis_log(&ax, xmin, xmax);
	else
		axis_linear(&ax, xmin, xmax, 0, aXTick, &nX, &xstep);
	axis_linear(&ay, 0, ymax, 0.04, aYTick, &nY, &ystep); /* room above the top */
	ax.p0 = x0;
	ax.p1 = x1;
	ay.p0 = yBot;
	ay.p1 = yTop;
	legend_layout(c, yTop, yBot, &L);
	if (chart_polys(c, &ax, &ay, aPl))
		goto oom;
	if (legend_place(c, &L, aPl, x0, x1, yTop, yBot, &lx, &ly) > 0 &&
	    L.h + 20 < 0.6 * (yBot - yTop)) {
		/* Every corner hides a line: raise the y axis so that the data
		 * stays below a legend at the top. */
		double plotH = yBot - yTop, room = plotH / (plotH - L.h - 20) - 1;
		axis_linear(&ay, 0, ymax, room, aYTick, &nY, &ystep);
		ay.p0 = yBot;
		ay.p1 = yTop;
		if (chart_polys(c, &ax, &ay, aPl))
			goto oom;
		legend_place(c, &L, aPl, x0, x1, yTop, yBot, &lx, &ly);
	}

	tk_sb_printf(sb, "<g font-family=\"" FONT "\" fill=\"#222\">\n");
	tk_sb_printf(sb, "<defs><clipPath id=\"tk-plot%d\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\""
	             " height=\"%.1f\"/></clipPath></defs>\n", iChart, x0 - 2, yTop - 2,
	             x1 - x0 + 4, yBot - yTop + 4);
	put_text(sb, ox + width / 2.0, 26, "middle", 15, "font-weight=\"bold\"", c->title);

	/* y grid, ticks and labels */
	for (int i = 0; i < nY; i++) {
		double y = axis_map(&ay, aYTick[i]);
		tk_sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>\n",
		             x0, y, x1, y);
		tk_sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
		             x0 - 5, y, x0, y);
		tick_label(lab, sizeof lab, aYTick[i], ystep);
		put_text(sb, x0 - 8, y + 4, "end", 12, NULL, lab);
	}
	draw_xaxis(sb, &ax, aXTick, nX, xstep, yTop, yBot);
	tk_sb_printf(sb, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\""
	             " stroke=\"#333\"/>\n", x0, yTop, x1 - x0, yBot - yTop);

	/* axis titles */
	put_text(sb, (x0 + x1) / 2, height - 14, "middle", 13, NULL, c->xlabel);
	char rot[80];
	snprintf(rot, sizeof rot, "transform=\"rotate(-90 %.1f %.1f)\"", ox + 18, (yTop + yBot) / 2);
	put_text(sb, ox + 18, (yTop + yBot) / 2, "middle", 13, rot, c->ylabel);

	for (int k = 0; k < c->nseries; k++)
		draw_series(sb, c, k, &aPl[k], &ax, &ay, iChart);
	if (!nPoint)
		put_text(sb, (x0 + x1) / 2, (yTop + yBot) / 2, "middle", 14, "fill=\"#777\"",
		         "no valid measurements");
	draw_legend(sb, c, &L, lx, ly);
	tk_sb_puts(sb, "</g>\n");
	goto done;
oom:
	sb->oom = 1;
done:
	for (int k = 0; k < c->nseries; k++)
		poly_free(&aPl[k]);
	free(aPl);
}

int rp_svg(tk_sb *sb, const rp_chart *aChart, int nChart, int width, int height)
{
	assert(sb && aChart && nChart >= 1);
	if (width <= 0)
		width = RP_SVG_W;
	if (height <= 0)
		height = RP_SVG_H;
	tk_sb_puts(sb, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
	tk_sb_printf(sb, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\""
	             " height=\"%d\" viewBox=\"0 0 %d %d\">\n", width * nChart, height,
	             width * nChart, height);
	tk_sb_puts(sb, "<title>");
	rp_xml_escape(sb, aChart[0].title);
	tk_sb_puts(sb, "</title>\n");
	tk_sb_printf(sb, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
	             width * nChart, height);
	for (int i = 0; i < nChart; i++)
		draw_chart(sb, &aChart[i], i, (double)i * width, width, height);
	tk_sb_puts(sb, "</svg>\n");
	return sb->oom ? tk_seterr(TK_ENOMEM, "out of memory") : TK_OK;
}

/* ---- charts of tuning curves ------------------------------------------------ */

int rp_plot_svg(tk_sb *sb, const rp_plot_line *aLine, int n, int xaxes, int logx)
{
	int mixed = 0, multiRun = 0, multiTask = 0, aggregate = 0, nChart = 0, rc = TK_OK;
	rp_chart aChart[2];
	rp_series *aSer = calloc((size_t)(2 * n + 1), sizeof *aSer);
	double *aBuf = NULL;
	char **aLabel = calloc((size_t)(n + 1), sizeof *aLabel);
	char title[2][200], ids[120] = "";
	const char *ylabel = "Best GFLOPS so far";
	size_t nPoint = 0;

	assert(sb && (aLine || n == 0) && (xaxes & (RP_X_TRIALS | RP_X_SECONDS)));
	for (int k = 0; k < n; k++) {
		const rp_curve *c = aLine[k].curve;
		nPoint += (size_t)c->n;
		mixed |= strcmp(rp_unit(c), rp_unit(aLine[0].curve)) != 0;
		multiRun |= aLine[k].run_id != aLine[0].run_id;
		multiTask |= strcmp(c->task, aLine[0].curve->task) != 0;
		aggregate |= c->task_id == 0;
	}
	if (!aSer || !aLabel || !(aBuf = malloc(sizeof *aBuf * (3 * nPoint + 1)))) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	if (mixed)
		ylabel = "Best throughput so far / best known";
	else if (n && aLine[0].curve->flops <= 0)
		ylabel = "Best calls per second so far (1/s)";

	/* the title names the runs, in order, each once */
	for (int k = 0; k < n && strlen(ids) + 28 < sizeof ids; k++) {
		int seen = 0;
		for (int j = 0; j < k; j++)
			seen |= aLine[j].run_id == aLine[k].run_id;
		if (!seen)
			snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%lld", ids[0] ? ", " : "",
			         (long long)aLine[k].run_id);
	}

	/* x (trials, seconds) and y of every curve, and its label */
	double *p = aBuf;
	for (int k = 0; k < n; k++) {
		const rp_curve *c = aLine[k].curve;
		double known = c->best_known > 0 ? rp_throughput(c->flops, c->best_known) : 0;
		double *x0 = p, *x1 = p + c->n, *y = p + 2 * c->n;
		p += 3 * c->n;
		for (int i = 0; i < c->n; i++) {
			const rp_point *pt = &c->pt[i];
			x0[i] = pt->trial;
			x1[i] = pt->seconds;
			y[i] = pt->latency <= 0 ? NAN : !mixed ? pt->thr : known > 0 ? pt->thr / known : NAN;
		}
		tk_sb lb;
		tk_sb_init(&lb);
		if (multiRun)
			tk_sb_printf(&lb, "run %lld%s%s%s", (long long)aLine[k].run_id,
			             aLine[k].method && aLine[k].method[0] ? " " : "",
			             aLine[k].method ? aLine[k].method : "", multiTask ? ": " : "");
		if (multiTask || !multiRun)
			tk_sb_puts(&lb, c->task);
		if (!(aLabel[k] = tk_sb_take(&lb))) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			goto done;
		}
		aSer[k] = (rp_series){ aLabel[k], c->n, x0, y, 1, NAN };
		aSer[n + k] = (rp_series){ aLabel[k], c->n, x1, y, 1, aLine[k].run_end };
	}

	if (xaxes & RP_X_TRIALS) {
		snprintf(title[nChart], sizeof title[0], "Run%s %s: best so far by trial",
		         multiRun ? "s" : "", ids);
		aChart[nChart++] = (rp_chart){
			title[0], aggregate ? "Trials (measurements of the run)"
			                    : "Trials (measurements of the task)",
			ylabel, 0, n, aSer,
		};
	}
	if (xaxes & RP_X_SECONDS) {
		snprintf(title[nChart], sizeof title[0], "Run%s %s: best so far over time",
		         multiRun ? "s" : "", ids);
		aChart[nChart] = (rp_chart){
			title[nChart], logx ? "Seconds since the run started (log scale)"
			                    : "Seconds since the run started",
			ylabel, logx, n, aSer + n,
		};
		nChart++;
	}
	rc = rp_svg(sb, aChart, nChart, RP_SVG_W, RP_SVG_H);
done:
	for (int k = 0; aLabel && k < n; k++)
		free(aLabel[k]);
	free(aLabel);
	free(aSer);
	free(aBuf);
	return rc;
}
