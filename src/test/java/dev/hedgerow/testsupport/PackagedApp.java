package dev.hedgerow.testsupport;

import io.quarkus.bootstrap.app.AugmentAction;
import io.quarkus.bootstrap.app.AugmentResult;
import io.quarkus.bootstrap.app.CuratedApplication;
import io.quarkus.bootstrap.app.QuarkusBootstrap;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * The application as it ships (the fast-jar {@code quarkus-run.jar}, production profile), built from this build's
 * {@code target/classes} for tests that run it as a real process: the test phase runs before {@code package}, and a
 * {@code target/quarkus-app} left by an earlier package may be older than the code under test. The build runs in a
 * child JVM on the test classpath (Quarkus' own bootstrap, as {@code quarkus:build} does it; tens of seconds on 2
 * cores), once per test JVM, into a temporary folder. Thread-safe.
 */
public final class PackagedApp {
    private static Path jar;

    private PackagedApp() {
    }

    /**
     * The packaged {@code quarkus-run.jar}, built on first use; {@code -Dhedgerow.test.app-jar=PATH} names one built
     * before instead (to rerun a test while only the test changes).
     */
    public static synchronized Path jar() {
        if (jar == null) {
            String given = System.getProperty("hedgerow.test.app-jar", "");
            jar = given.isBlank() ? build() : Path.of(given);
        }
        return jar;
    }

    /**
     * A process of the packaged app ({@code -Xmx256m}), its output (both streams) to {@code log}, its environment
     * cleared of Hedgerow's and Quarkus' settings and {@code REDIS_URL}: the caller sets what the test needs.
     */
    public static ProcessBuilder process(Path log) {
        ProcessBuilder pb = new ProcessBuilder(javaBin(), "-Xmx256m", "-jar", jar().toString())
                .redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("HEDGEROW_") || k.startsWith("QUARKUS_")
                || k.equals("REDIS_URL"));
        return pb;
    }

    /** The java executable of the running JVM. */
    public static String javaBin() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    private static Path build() {
        try {
            Path out = Files.createTempDirectory("hedgerow-packaged");
            Runtime.getRuntime().addShutdownHook(new Thread(() -> delete(out))); // ~30 MB each
            Path log = out.resolve("build.log");
            String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
            List<String> cmd = new ArrayList<>(List.of(javaBin(), "-Xmx768m", "-cp", cp,
                    PackagedApp.class.getName(), Path.of("").toAbsolutePath().toString(), out.toString()));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            if (!p.waitFor(5, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                throw new IllegalStateException("packaging the app took over 5 minutes; log: " + log);
            }
            Path built = out.resolve("quarkus-app").resolve("quarkus-run.jar");
            if (p.exitValue() != 0 || !Files.exists(built)) {
                throw new IllegalStateException("packaging the app failed (" + p.exitValue() + "):\n"
                        + Files.readString(log));
            }
            return built;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Removes a folder and everything in it, best effort. */
    private static void delete(Path dir) {
        try (java.util.stream.Stream<Path> all = Files.walk(dir)) {
            all.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // a temporary folder left behind
        }
    }

    /** In the child JVM: {@code PackagedApp <project root> <output folder>}. */
    public static void main(String[] args) throws Exception {
        Path project = Path.of(args[0]);
        Path out = Path.of(args[1]);
        Properties build = new Properties();
        build.setProperty("quarkus.package.jar.type", "fast-jar");
        try (CuratedApplication app = QuarkusBootstrap.builder()
                .setApplicationRoot(project.resolve("target").resolve("classes"))
                .setProjectRoot(project)
                .setTargetDirectory(out)
                .setBaseName("hedgerow-test")
                .setMode(QuarkusBootstrap.Mode.PROD)
                .setIsolateDeployment(true)
                .setLocalProjectDiscovery(true)
                .setBuildSystemProperties(build)
                .build().bootstrap()) {
            AugmentAction augment = app.createAugmentor();
            AugmentResult r = augment.createProductionApplication();
            System.out.println("packaged: " + r.getJar().getPath() + File.separator);
        }
        System.exit(0);
    }
}
