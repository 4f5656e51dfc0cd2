package dev.hedgerow.bench;

import java.nio.file.Path;

/**
 * Entry point of {@code scripts/bench}: {@code BenchMain <overhead|hedging|routing|chaos|soak> <repo> <out>}. Runs
 * one benchmark against the packaged app and simulators on 127.0.0.1 and writes its section and plots under
 * {@code out}. Benchmarks are named *Bench, never *Test, so {@code ./mvnw test} never runs them.
 */
public final class BenchMain {
    private BenchMain() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: BenchMain <overhead|hedging|routing|chaos|soak> <repo> <out>");
            System.exit(2);
        }
        System.setProperty("java.awt.headless", "true");
        try (BenchEnv env = new BenchEnv(Path.of(args[1]).toAbsolutePath(), Path.of(args[2]).toAbsolutePath())) {
            switch (args[0]) {
                case "overhead" -> new OverheadBench(env).run();
                case "hedging" -> new HedgingBench(env).run();
                case "routing" -> new RoutingBench(env).run();
                case "chaos" -> new ChaosBench(env).run();
                case "soak" -> new SoakBench(env).run();
                default -> throw new IllegalArgumentException("unknown benchmark " + args[0]);
            }
        }
        System.exit(0);
    }
}
