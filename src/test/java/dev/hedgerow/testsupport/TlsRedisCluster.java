package dev.hedgerow.testsupport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * A private 3-master Redis Cluster that takes TLS, as ElastiCache does with cluster mode and in-transit encryption:
 * every node listens with TLS ({@code --tls-port}) with one certificate for the name {@code localhost} only, from
 * one test authority ({@link TestCertificates}); the cluster bus and replication go over TLS too
 * ({@code --tls-cluster yes --tls-replication yes}), so {@code CLUSTER SLOTS} asked over TLS names the nodes' TLS
 * ports. With {@code announceHostname} the nodes announce the hostname {@code localhost} and prefer it as their
 * endpoint (as ElastiCache announces the hostnames its certificates name); without, they announce their IP,
 * {@code 127.0.0.1}, which the certificate does not name. The nodes are joined by
 * {@code redis-cli --tls --cacert ... --cluster create} over their TLS ports. Each node keeps a plain port on
 * 127.0.0.1 for the test's own {@link Resp} checks only. {@link #close()} stops the nodes and deletes the files.
 */
public final class TlsRedisCluster implements AutoCloseable {
    private final TestCertificates certs;
    private final List<RedisServer> nodes;
    private final List<Integer> tlsPorts;

    private TlsRedisCluster(TestCertificates certs, List<RedisServer> nodes, List<Integer> tlsPorts) {
        this.certs = certs;
        this.nodes = List.copyOf(nodes);
        this.tlsPorts = List.copyOf(tlsPorts);
    }

    /** Starts three TLS masters and creates the cluster (a few seconds, most of it openssl's). */
    public static TlsRedisCluster start(boolean announceHostname) {
        TestCertificates certs = TestCertificates.forLocalhost();
        List<RedisServer> nodes = new ArrayList<>();
        List<Integer> tlsPorts = new ArrayList<>();
        try {
            Set<Integer> taken = new HashSet<>();
            for (int i = 0; i < 3; i++) {
                int tlsPort = distinctFreePort(taken);
                int busPort = distinctFreePort(taken);
                List<String> args = new ArrayList<>(certs.redisArgs(tlsPort));
                args.addAll(List.of("--tls-cluster", "yes", "--tls-replication", "yes",
                        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", "5000", "--cluster-port", Integer.toString(busPort)));
                if (announceHostname) {
                    args.addAll(List.of("--cluster-announce-hostname", "localhost",
                            "--cluster-preferred-endpoint-type", "hostname"));
                }
                RedisServer node = RedisServer.start(args, false);
                nodes.add(node);
                taken.add(node.port());
                tlsPorts.add(tlsPort);
            }
            List<String> create = new ArrayList<>(List.of("--cluster", "create"));
            tlsPorts.forEach(p -> create.add("127.0.0.1:" + p));
            create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
            cliOverTls(certs, create);
            awaitReady(nodes, announceHostname ? "localhost" : "127.0.0.1");
            return new TlsRedisCluster(certs, nodes, tlsPorts);
        } catch (RuntimeException e) {
            nodes.forEach(RedisServer::close);
            certs.close();
            throw e;
        }
    }

    /** One TLS connection string per master by the name the certificate holds: {@code rediss://localhost:PORT}. */
    public List<String> urls() {
        return tlsPorts.stream().map(p -> "rediss://localhost:" + p).toList();
    }

    public List<Integer> tlsPorts() {
        return tlsPorts;
    }

    /** The PEM certificate of the authority that issued the nodes' certificate. */
    public String caFile() {
        return certs.caFile();
    }

    /** The nodes (their plain ports, for checks through {@link Resp}), in the order of {@link #tlsPorts()}. */
    public List<RedisServer> nodes() {
        return nodes;
    }

    /** {@code CLUSTER SLOTS} as {@code redis-cli} gets it over TLS from node {@code i} (by the name localhost). */
    public String clusterSlotsOverTls(int i) {
        return cliOverTls(certs, List.of("-h", "localhost", "-p", Integer.toString(tlsPorts.get(i)),
                "CLUSTER", "SLOTS"));
    }

    @Override
    public void close() {
        nodes.forEach(RedisServer::close);
        certs.close();
    }

    private static int distinctFreePort(Set<Integer> taken) {
        for (int i = 0; i < 20; i++) {
            int port = RedisServer.freePort(false);
            if (taken.add(port)) {
                return port;
            }
        }
        throw new IllegalStateException("no distinct free port found");
    }

    private static String cliOverTls(TestCertificates certs, List<String> args) {
        List<String> cmd = new ArrayList<>(List.of(RedisServer.binary("redis-cli"), "--tls", "--cacert",
                certs.caFile()));
        cmd.addAll(args);
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            byte[] out = p.getInputStream().readAllBytes();
            String text = new String(out, StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IllegalStateException("redis-cli " + String.join(" ", args) + " failed:\n" + text);
            }
            return text;
        } catch (IOException e) {
            throw new IllegalStateException("cannot run redis-cli: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * Until every node says {@code cluster_state:ok} with three known nodes and names all three masters in
     * {@code CLUSTER SLOTS} by {@code host} (announced hostnames travel by gossip, so a node may answer "?" or ""
     * for another for a moment after the cluster is made).
     */
    private static void awaitReady(List<RedisServer> nodes, String host) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        String last = "";
        while (System.nanoTime() < deadline) {
            boolean ready = true;
            for (RedisServer n : nodes) {
                try {
                    last = Resp.command(n.port(), "CLUSTER", "INFO");
                    ready &= last.contains("cluster_state:ok") && last.contains("cluster_known_nodes:3");
                    if (ready) {
                        last = Resp.command(n.port(), "CLUSTER", "SLOTS");
                        ready = last.lines().filter(host::equals).count() == 3;
                    }
                } catch (IOException e) {
                    ready = false;
                }
            }
            if (ready) {
                return;
            }
            RedisServer.sleep(50);
        }
        throw new IllegalStateException("the TLS cluster did not become ready:\n" + last);
    }
}
