package dev.hedgerow.bench;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;

import javax.imageio.ImageIO;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * PNG charts drawn with Java2D (no Python or gnuplot needed): grouped bar charts and line charts, including the
 * latency-by-percentile chart of HdrHistogram (x axis {@code 1 / (1 - p)} on a log scale, so 50 %, 90 %, 99 %,
 * 99.9 % are evenly spaced). Stateless; each call writes one file.
 */
final class Plot {
    private static final int W = 900;
    private static final int H = 520;
    private static final int L = 90;
    private static final int R = 30;
    private static final int T = 60;
    private static final int B = 80;
    private static final Color[] PALETTE = {new Color(0x1b9e77), new Color(0xd95f02), new Color(0x7570b3),
            new Color(0xe7298a), new Color(0x66a61e), new Color(0xe6ab02)};

    private Plot() {
    }

    /** A grouped bar chart: one group per category, one bar per series, each bar labelled with its value. */
    static void bars(Path file, String title, String yLabel, List<String> categories, Map<String, double[]> series) {
        BufferedImage img = new BufferedImage(W, H, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = canvas(img, title);
        double max = 0;
        for (double[] v : series.values()) {
            for (double d : v) {
                if (Double.isFinite(d)) {
                    max = Math.max(max, d);
                }
            }
        }
        max = niceCeil(max * 1.1);
        axes(g, yLabel);
        yTicks(g, 0, max, false);
        int plotW = W - L - R;
        int groups = categories.size();
        int n = series.size();
        double groupW = plotW / (double) groups;
        double barW = groupW * 0.8 / n;
        int s = 0;
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        for (Map.Entry<String, double[]> e : series.entrySet()) {
            g.setColor(PALETTE[s % PALETTE.length]);
            for (int c = 0; c < groups; c++) {
                double v = e.getValue()[c];
                if (!Double.isFinite(v)) {
                    continue;
                }
                int x = (int) (L + c * groupW + groupW * 0.1 + s * barW);
                int y = yPix(v, 0, max, false);
                g.fillRect(x, y, (int) Math.max(1, barW - 2), H - B - y);
                g.setColor(Color.DARK_GRAY);
                String label = fmt(v);
                g.drawString(label, x + (int) (barW - g.getFontMetrics().stringWidth(label)) / 2 - 1, y - 3);
                g.setColor(PALETTE[s % PALETTE.length]);
            }
            s++;
        }
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        for (int c = 0; c < groups; c++) {
            String label = categories.get(c);
            FontMetrics fm = g.getFontMetrics();
            g.drawString(label, (int) (L + c * groupW + (groupW - fm.stringWidth(label)) / 2), H - B + 18);
        }
        legend(g, new ArrayList<>(series.keySet()));
        write(img, file);
    }

    /** One line per histogram: latency (ms, log scale) by percentile, from 0 % to 99.99 %. */
    static void percentiles(Path file, String title, Map<String, Histogram> hists, double unitDivisor,
                            String yLabel) {
        Map<String, List<double[]>> series = new LinkedHashMap<>();
        double maxX = 10_000; // 99.99 %
        double minY = Double.MAX_VALUE;
        double maxY = 0;
        for (Map.Entry<String, Histogram> e : hists.entrySet()) {
            List<double[]> pts = new ArrayList<>();
            if (e.getValue().getTotalCount() > 0) {
                for (HistogramIterationValue v : e.getValue().percentiles(5)) {
                    double p = v.getPercentileLevelIteratedTo() / 100.0;
                    double x = p >= 1 ? maxX : Math.min(maxX, 1 / (1 - p));
                    double y = v.getValueIteratedTo() / unitDivisor;
                    pts.add(new double[] {x, y});
                    minY = Math.min(minY, y);
                    maxY = Math.max(maxY, y);
                }
            }
            series.put(e.getKey(), pts);
        }
        if (maxY == 0) {
            minY = 0.1;
            maxY = 1;
        }
        double lo = Math.pow(10, Math.floor(Math.log10(Math.max(1e-3, minY))));
        double hi = Math.pow(10, Math.ceil(Math.log10(maxY * 1.05)));
        BufferedImage img = new BufferedImage(W, H, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = canvas(img, title);
        axes(g, yLabel);
        yTicks(g, lo, hi, true);
        String[] labels = {"0%", "90%", "99%", "99.9%", "99.99%"};
        double[] xs = {1, 10, 100, 1000, 10_000};
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        for (int i = 0; i < xs.length; i++) {
            int x = xPixLog(xs[i], maxX);
            g.setColor(new Color(0xe0e0e0));
            g.drawLine(x, T, x, H - B);
            g.setColor(Color.BLACK);
            g.drawString(labels[i], x - g.getFontMetrics().stringWidth(labels[i]) / 2, H - B + 18);
        }
        g.drawString("percentile", W / 2 - 30, H - B + 40);
        int s = 0;
        g.setStroke(new BasicStroke(2.2f));
        for (List<double[]> pts : series.values()) {
            g.setColor(PALETTE[s++ % PALETTE.length]);
            for (int i = 1; i < pts.size(); i++) {
                g.drawLine(xPixLog(pts.get(i - 1)[0], maxX), yPix(pts.get(i - 1)[1], lo, hi, true),
                        xPixLog(pts.get(i)[0], maxX), yPix(pts.get(i)[1], lo, hi, true));
            }
        }
        g.setStroke(new BasicStroke(1f));
        legend(g, new ArrayList<>(series.keySet()));
        write(img, file);
    }

    /** Line chart over time: one line per series, x in seconds, each with its own points. */
    static void lines(Path file, String title, String xLabel, String yLabel, Map<String, List<double[]>> series) {
        double maxX = 1;
        double maxY = 0;
        for (List<double[]> pts : series.values()) {
            for (double[] p : pts) {
                maxX = Math.max(maxX, p[0]);
                maxY = Math.max(maxY, p[1]);
            }
        }
        maxY = niceCeil(maxY * 1.15);
        BufferedImage img = new BufferedImage(W, H, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = canvas(img, title);
        axes(g, yLabel);
        yTicks(g, 0, maxY, false);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        double step = niceCeil(maxX / 6);
        for (double x = 0; x <= maxX + 1e-9; x += step) {
            int px = (int) (L + x / maxX * (W - L - R));
            g.setColor(Color.BLACK);
            String lab = fmt(x);
            g.drawString(lab, px - g.getFontMetrics().stringWidth(lab) / 2, H - B + 18);
        }
        g.drawString(xLabel, W / 2 - g.getFontMetrics().stringWidth(xLabel) / 2, H - B + 40);
        int s = 0;
        g.setStroke(new BasicStroke(2.2f));
        for (List<double[]> pts : series.values()) {
            g.setColor(PALETTE[s++ % PALETTE.length]);
            for (int i = 0; i < pts.size(); i++) {
                int x = (int) (L + pts.get(i)[0] / maxX * (W - L - R));
                int y = yPix(pts.get(i)[1], 0, maxY, false);
                g.fillOval(x - 3, y - 3, 6, 6);
                if (i > 0) {
                    g.drawLine((int) (L + pts.get(i - 1)[0] / maxX * (W - L - R)),
                            yPix(pts.get(i - 1)[1], 0, maxY, false), x, y);
                }
            }
        }
        g.setStroke(new BasicStroke(1f));
        legend(g, new ArrayList<>(series.keySet()));
        write(img, file);
    }

    private static Graphics2D canvas(BufferedImage img, String title) {
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, W, H);
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
        g.drawString(title, L, 30);
        return g;
    }

    private static void axes(Graphics2D g, String yLabel) {
        g.setColor(Color.BLACK);
        g.drawLine(L, T, L, H - B);
        g.drawLine(L, H - B, W - R, H - B);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        Graphics2D r = (Graphics2D) g.create();
        r.rotate(-Math.PI / 2);
        r.drawString(yLabel, -(T + (H - T - B) / 2) - r.getFontMetrics().stringWidth(yLabel) / 2, 22);
        r.dispose();
    }

    private static void yTicks(Graphics2D g, double lo, double hi, boolean log) {
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        List<Double> ticks = new ArrayList<>();
        if (log) {
            for (double v = lo; v <= hi * 1.0001; v *= 10) {
                ticks.add(v);
            }
        } else {
            double step = niceCeil((hi - lo) / 6);
            for (double v = lo; v <= hi + 1e-9; v += step) {
                ticks.add(v);
            }
        }
        for (double v : ticks) {
            int y = yPix(v, lo, hi, log);
            g.setColor(new Color(0xe0e0e0));
            g.drawLine(L + 1, y, W - R, y);
            g.setColor(Color.BLACK);
            String s = fmt(v);
            g.drawString(s, L - 6 - g.getFontMetrics().stringWidth(s), y + 4);
        }
    }

    private static void legend(Graphics2D g, List<String> names) {
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        int x = L + 10;
        int y = H - 22;
        for (int i = 0; i < names.size(); i++) {
            g.setColor(PALETTE[i % PALETTE.length]);
            g.fillRect(x, y - 10, 14, 10);
            g.setColor(Color.BLACK);
            g.drawString(names.get(i), x + 18, y);
            x += 30 + g.getFontMetrics().stringWidth(names.get(i));
        }
    }

    private static int yPix(double v, double lo, double hi, boolean log) {
        double f = log ? (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))
                : (v - lo) / (hi - lo);
        return (int) Math.round(H - B - f * (H - T - B));
    }

    private static int xPixLog(double x, double maxX) {
        return (int) Math.round(L + Math.log10(Math.max(1, x)) / Math.log10(maxX) * (W - L - R));
    }

    static double niceCeil(double v) {
        if (v <= 0) {
            return 1;
        }
        double mag = Math.pow(10, Math.floor(Math.log10(v)));
        for (double m : new double[] {1, 2, 2.5, 5, 10}) {
            if (m * mag >= v) {
                return m * mag;
            }
        }
        return 10 * mag;
    }

    static String fmt(double v) {
        if (Math.abs(v) >= 100 || v == Math.rint(v)) {
            return String.format(Locale.ROOT, "%.0f", v);
        }
        if (Math.abs(v) >= 1) {
            return String.format(Locale.ROOT, "%.1f", v);
        }
        return String.format(Locale.ROOT, "%.2f", v);
    }

    private static void write(BufferedImage img, Path file) {
        try {
            ImageIO.write(img, "png", file.toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
