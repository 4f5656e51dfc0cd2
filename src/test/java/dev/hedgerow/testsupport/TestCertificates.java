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
 * A test certificate authority and one server certificate it issued for the name {@code localhost} only (no IP
 * address), made with {@code openssl} in a temporary directory: {@code ca.crt}, {@code server.crt},
 * {@code server.key}. Shared by {@link TlsRedis} and {@link TlsRedisCluster}; {@link #close()} deletes the files.
 */
public final class TestCertificates implements AutoCloseable {
    private final Path dir;

    private TestCertificates(Path dir) {
        this.dir = dir;
    }

    public static TestCertificates forLocalhost() {
        Path dir;
        try {
            dir = Files.createTempDirectory("hedgerow-redis-tls-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String openssl = RedisServer.binary("openssl");
        openssl(dir, openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
                "-days", "2", "-subj", "/CN=hedgerow-test-ca");
        openssl(dir, openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
                "server.csr", "-subj", "/CN=localhost");
        try {
            Files.writeString(dir.resolve("ext.cnf"), "subjectAltName=DNS:localhost\n");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        openssl(dir, openssl, "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "ext.cnf");
        return new TestCertificates(dir);
    }

    /** The PEM certificate of the authority. */
    public String caFile() {
        return dir.resolve("ca.crt").toString();
    }

    public String certFile() {
        return dir.resolve("server.crt").toString();
    }

    public String keyFile() {
        return dir.resolve("server.key").toString();
    }

    /** redis-server's arguments to listen with TLS on {@code tlsPort} with this certificate (no client certificates). */
    public List<String> redisArgs(int tlsPort) {
        return List.of("--tls-port", Integer.toString(tlsPort), "--tls-cert-file", certFile(), "--tls-key-file",
                keyFile(), "--tls-ca-cert-file", caFile(), "--tls-auth-clients", "no");
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

    @Override
    public void close() {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        } catch (IOException ignored) {
            // a leftover temp dir is harmless
        }
    }
}
