package dev.hedgerow.testsupport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A private 3-master Redis Cluster for tests: three {@link RedisServer}s with {@code --cluster-enabled yes} on free
 * ports (each with its own {@code nodes.conf} in its own temp dir), joined by
 * {@code redis-cli --cluster create ... --cluster-replicas 0 --cluster-yes}; {@link #start()} returns once every node
 * reports {@code cluster_state:ok}. Closing stops all nodes. Thread-safe for the same reasons as {@link RedisServer}.
 */
public final class RedisCluster implements AutoCloseable {

    private final List<RedisServer> nodes;

    private RedisCluster(List<RedisServer> nodes) {
        this.nodes = List.copyOf(nodes);
    }

    /** Starts three masters and creates the cluster (about 2 s). */
    public static RedisCluster start() {
        List<RedisServer> nodes = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                nodes.add(RedisServer.start(List.of("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", "5000"), true));
            }
            create(nodes);
            awaitOk(nodes);
            return new RedisCluster(nodes);
        } catch (RuntimeException e) {
            nodes.forEach(RedisServer::close);
            throw e;
        }
    }

    public List<Integer> ports() {
        return nodes.stream().map(RedisServer::port).toList();
    }

    /** One connection string per master, e.g. {@code redis://127.0.0.1:40123}. */
    public List<String> urls() {
        return nodes.stream().map(RedisServer::url).toList();
    }

    public List<RedisServer> nodes() {
        return nodes;
    }

    @Override
    public void close() {
        nodes.forEach(RedisServer::close);
    }

    private static void create(List<RedisServer> nodes) {
        List<String> cmd = new ArrayList<>(List.of(RedisServer.binary("redis-cli"), "--cluster", "create"));
        nodes.forEach(n -> cmd.add("127.0.0.1:" + n.port()));
        cmd.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IllegalStateException("redis-cli --cluster create failed:\n"
                        + new String(out, StandardCharsets.UTF_8));
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run redis-cli: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static void awaitOk(List<RedisServer> nodes) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        String last = "";
        while (System.nanoTime() < deadline) {
            boolean allOk = true;
            for (RedisServer n : nodes) {
                try {
                    last = Resp.command(n.port(), "CLUSTER", "INFO");
                    allOk &= last.contains("cluster_state:ok") && last.contains("cluster_known_nodes:3");
                } catch (IOException e) {
                    allOk = false;
                }
            }
            if (allOk) {
                return;
            }
            RedisServer.sleep(50);
        }
        throw new IllegalStateException("cluster did not reach cluster_state:ok:\n" + last);
    }
}
