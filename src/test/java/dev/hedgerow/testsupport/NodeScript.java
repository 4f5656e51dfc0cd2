package dev.hedgerow.testsupport;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs a Node script of the tests (under {@code src/test/browser}, {@code src/test/sdk}) the way a user would run
 * it: {@code npm install} of the folder's pinned packages when one is missing, then {@code node} with the output
 * (stdout and stderr) captured for the test's assertion message.
 */
public final class NodeScript {
    /**
     * How long a Node spec (the dashboard's browser test, the SDK test) may run before it is stopped as hung: its own
     * waits bound each step, this only catches a spec that never ends. Far above a quiet run's time, as the specs
     * took over 180 s on a loaded host, under the Quarkus test hang detector's 10 minutes.
     */
    public static final int PATIENCE_SECONDS = 480;

    private NodeScript() {
    }

    /** The exit code ({@code -1} after a timeout) and everything the process printed. */
    public record Result(int exit, String output) {
    }

    /** Whether {@code node} is on the PATH (the Node tests are skipped, with a message, without it). */
    public static boolean nodeOnPath() {
        return onPath("node");
    }

    /** Runs {@code npm install} in {@code dir} when {@code node_modules/<module>} is not there yet. */
    public static void installIfMissing(Path dir, String module) throws IOException, InterruptedException {
        if (!Files.isDirectory(dir.resolve("node_modules").resolve(module))) {
            Result r = run(List.of("npm", "install", "--no-audit", "--no-fund", "--silent"), dir, Map.of(), 300);
            if (r.exit() != 0) {
                throw new IllegalStateException("npm install in " + dir + " failed:\n" + r.output());
            }
        }
    }

    /** Runs {@code cmd} in {@code dir} with {@code env} added to this process's environment. */
    public static Result run(List<String> cmd, Path dir, Map<String, String> env, int seconds)
            throws IOException, InterruptedException {
        File log = Files.createTempFile("hedgerow-node", ".log").toFile();
        try {
            ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
                    .redirectOutput(log);
            pb.environment().putAll(env);
            Process p = pb.start();
            if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return new Result(-1, "timed out after " + seconds + " s:\n" + Files.readString(log.toPath()));
            }
            return new Result(p.exitValue(), Files.readString(log.toPath(), StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(log.toPath());
        }
    }

    private static boolean onPath(String exe) {
        String path = System.getenv("PATH");
        if (path == null) {
            return false;
        }
        for (String d : path.split(File.pathSeparator)) {
            if (Files.isExecutable(Path.of(d, exe))) {
                return true;
            }
        }
        return false;
    }
}
