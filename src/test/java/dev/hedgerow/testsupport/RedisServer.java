package dev.hedgerow.testsupport;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A private {@code redis-server} for tests: a child process on a free port of 127.0.0.1 with its own temporary
 * directory, no persistence ({@code --save '' --appendonly no}), started in the foreground and stopped on
 * {@link #close()}. It can be stopped and restarted on the same port to simulate a Redis outage. It never uses port
 * 6379 and never touches a Redis it did not start. A JVM shutdown hook kills any server a test forgot to close.
 *
 * <p>Thread-safe: start/stop/restart are synchronized.
 */
public final class RedisServer implements AutoCloseable {

    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly)));
    }

    private final int port;
    private final Path dir;
    private final List<String> extraArgs;
    private Process process;

    private RedisServer(int port, Path dir, List<String> extraArgs) {
        this.port = port;
        this.dir = dir;
        this.extraArgs = List.copyOf(extraArgs);
    }

    /** Starts a standalone server on a free port. */
    public static RedisServer start() {
        return start(List.of(), false);
    }

    /**
     * Starts a server with extra arguments on a free port (also checking port + 10000, the cluster bus, when
     * {@code clusterBus}); retries on another port if the chosen one was taken in the meantime.
     */
    static RedisServer start(List<String> extraArgs, boolean clusterBus) {
        String binary = binary("redis-server");
        IllegalStateException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            int port = freePort(clusterBus);
            Path dir;
            try {
                dir = Files.createTempDirectory("hedgerow-redis-" + port + "-");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            RedisServer server = new RedisServer(port, dir, extraArgs);
            try {
                server.launch(binary);
                return server;
            } catch (IllegalStateException e) {
                last = e;
                server.close();
            }
        }
        throw last;
    }

    public int port() {
        return port;
    }

    /** Connection string for clients, e.g. {@code redis://127.0.0.1:40123}. */
    public String url() {
        return "redis://127.0.0.1:" + port;
    }

    public Path dir() {
        return dir;
    }

    public synchronized boolean isRunning() {
        return process != null && process.isAlive();
    }

    /** Stops the server (SIGTERM, then SIGKILL after 5 s) and waits until the port refuses connections. */
    public synchronized void stop() {
        if (process == null) {
            return;
        }
        Process p = process;
        process = null;
        p.destroy();
        try {
            if (!p.waitFor(5, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            LIVE.remove(p);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (Resp.pings(port) && System.nanoTime() < deadline) {
            sleep(20);
        }
    }

    /** Starts the server again on the same port (after {@link #stop()}); its data is gone (no persistence). */
    public synchronized void restart() {
        if (isRunning()) {
            return;
        }
        launch(binary("redis-server"));
    }

    /** Stops the server and deletes its directory. */
    @Override
    public synchronized void close() {
        stop();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        } catch (IOException ignored) {
            // a leftover temp dir is harmless
        }
    }

    private void launch(String binary) {
        List<String> cmd = new ArrayList<>(List.of(binary, "--port", Integer.toString(port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", dir.toString(), "--daemonize", "no"));
        cmd.addAll(extraArgs);
        File log = dir.resolve("redis.log").toFile();
        try {
            process = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log)).start();
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + binary + ": " + e.getMessage(), e);
        }
        LIVE.add(process);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                break;
            }
            if (Resp.pings(port)) {
                return;
            }
            sleep(20);
        }
        Process p = process;
        process = null;
        p.destroyForcibly();
        LIVE.remove(p);
        throw new IllegalStateException("redis-server on port " + port + " did not answer PING; log:\n" + tail(log));
    }

    /** Finds a tool on the PATH or fails with the way to install it. */
    static String binary(String name) {
        String path = System.getenv().getOrDefault("PATH", "/usr/local/bin:/usr/bin:/bin");
        for (String d : (path + ":/usr/bin:/usr/sbin").split(File.pathSeparator)) {
            File f = new File(d, name);
            if (f.canExecute()) {
                return f.getAbsolutePath();
            }
        }
        throw new IllegalStateException(name + " not found on PATH: install it with `apt-get install -y "
                + (name.startsWith("redis") ? "redis-server" : name) + "` (scripts/test installs it before the tests)");
    }

    static int freePort(boolean clusterBus) {
        for (int i = 0; i < 50; i++) {
            int port = bindable(0);
            if (port == 6379 || port == 16379) {
                continue; // never near the machine's own Redis
            }
            if (!clusterBus) {
                return port;
            }
            if (port + 10000 <= 65535 && bindable(port + 10000) > 0) {
                return port;
            }
        }
        throw new IllegalStateException("no free port found");
    }

    /** Binds and releases a port on 127.0.0.1 (0 = any); returns it, or -1 when it is taken. */
    private static int bindable(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getByName("127.0.0.1"))) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            return -1;
        }
    }

    private static String tail(File log) {
        try {
            List<String> lines = Files.readAllLines(log.toPath());
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
