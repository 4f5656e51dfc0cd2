package dev.hedgerow.testsupport;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A private {@link RedisServer} that also listens with TLS, as a managed Redis does (ElastiCache Serverless takes TLS
 * only): its certificate, for the name {@code localhost} only, is issued by a test authority made for it with
 * {@code openssl}, whose certificate {@link #caFile()} is. The plain port stays open for the test's own {@link Resp}
 * checks. {@link #close()} stops the server and deletes the files.
 */
public final class TlsRedis implements AutoCloseable {
    private final Path certs;
    private final int tlsPort;
    private final RedisServer server;

    private TlsRedis(Path certs, int tlsPort, RedisServer server) {
        this.certs = certs;
        this.tlsPort = tlsPort;
        this.server = server;
    }

    public static TlsRedis start() {
        Path certs;
        try {
            certs = Files.createTempDirectory("hedgerow-redis-tls-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String openssl = RedisServer.binary("openssl");
        openssl(certs, openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
                "-days", "2", "-subj", "/CN=hedgerow-test-ca");
        openssl(certs, openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
                "server.csr", "-subj", "/CN=localhost");
        try {
            Files.writeString(certs.resolve("ext.cnf"), "subjectAltName=DNS:localhost\n");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        openssl(certs, openssl, "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "ext.cnf");
        int tlsPort = RedisServer.freePort(false);
        RedisServer server = RedisServer.start(List.of("--tls-port", Integer.toString(tlsPort),
                "--tls-cert-file", certs.resolve("server.crt").toString(),
                "--tls-key-file", certs.resolve("server.key").toString(),
                "--tls-ca-cert-file", certs.resolve("ca.crt").toString(), "--tls-auth-clients", "no"), false);
        return new TlsRedis(certs, tlsPort, server);
    }

    private static void openssl(Path dir, String openssl, String... args) {
        List<String> cmd = new ArrayList<>(List.of(openssl));
        cmd.addAll(List.of(args));
        File log = dir.resolve("openssl.log").toFile();
        try {
            Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log)).start();
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IllegalStateException("openssl " + String.join(" ", args) + " failed:\n"
                        + Files.readString(log.toPath()));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The TLS address by the name its certificate holds: {@code rediss://localhost:PORT}. */
    public String url() {
        return "rediss://localhost:" + tlsPort;
    }

    /** The TLS address by an address its certificate does not name: {@code rediss://127.0.0.1:PORT}. */
    public String urlByAddress() {
        return "rediss://127.0.0.1:" + tlsPort;
    }

    /** The PEM certificate of the authority that issued the server's. */
    public String caFile() {
        return certs.resolve("ca.crt").toString();
    }

    /** The server (its plain port, for checks through {@link Resp}). */
    public RedisServer server() {
        return server;
    }

    @Override
    public void close() {
        server.close();
        try (Stream<Path> files = Files.walk(certs)) {
            files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        } catch (IOException ignored) {
            // a leftover temp dir is harmless
        }
    }
}
