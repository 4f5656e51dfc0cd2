package dev.hedgerow.catalog;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Locale;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * Refuses provider URLs that point at a cloud instance-metadata service, the classic SSRF target: a catalog (or an
 * admin edit) that sends requests, with a provider's key, to {@code 169.254.169.254} would leak the machine's cloud
 * credentials. Checked on the literal host: well-known metadata names, any IPv4 link-local address
 * (169.254.0.0/16: AWS/GCP/Azure/OCI IMDS, ECS task metadata), Alibaba's {@code 100.100.100.200}, Oracle's legacy
 * {@code 192.0.0.192}, AWS's IPv6 {@code fd00:ec2::254}, IPv6 link-local (fe80::/10), and IPv4 spelt in other
 * forms (IPv4-mapped or NAT64 IPv6, integer, octal or hex parts). A DNS name that merely resolves (or is later
 * re-pointed) to such an address passes here; the gateway's upstream client checks every connection's resolved
 * address with {@link #metadataReason} too, before anything is sent. Operators who really mean it set
 * {@code HEDGEROW_ALLOW_METADATA_URLS=true}.
 * Stateless and thread-safe.
 */
public final class ProviderUrls {
    /** The environment variable that lets metadata addresses through (exactly "true"). */
    public static final String ALLOW_ENV = "HEDGEROW_ALLOW_METADATA_URLS";

    private static final Set<String> NAMES = Set.of("metadata.google.internal", "metadata.goog", "metadata",
            "instance-data", "instance-data.ec2.internal", "metadata.azure.internal", "metadata.tencentyun.com");

    /** Compiled once: the gateway checks every upstream connection's peer address with {@link #metadataReason}. */
    private static final Pattern V4_CHARS = Pattern.compile("[0-9a-fx.]+");
    private static final Pattern V6_CHARS = Pattern.compile("[0-9a-f:.]+");

    private ProviderUrls() {
    }

    /** Whether the environment lets metadata addresses through ({@value #ALLOW_ENV} exactly "true"). */
    public static boolean metadataAllowed(Function<String, String> env) {
        return "true".equals(env.apply(ALLOW_ENV));
    }

    /** Why {@code host} (as in a URL; brackets allowed) is a metadata endpoint, or null when it is not one. */
    public static String metadataReason(String host) {
        if (host == null) {
            return null;
        }
        String h = host.toLowerCase(Locale.ROOT).trim();
        while (h.endsWith(".")) {
            h = h.substring(0, h.length() - 1);
        }
        if (h.startsWith("[") && h.endsWith("]")) {
            h = h.substring(1, h.length() - 1);
        }
        if (NAMES.contains(h)) {
            return "a cloud metadata host name";
        }
        Long v4 = ipv4(h);
        if (v4 != null) {
            return v4Reason(v4);
        }
        if (h.contains(":")) {
            return v6Reason(h);
        }
        return null;
    }

    private static String v4Reason(long a) {
        if ((a >>> 16) == ((169L << 8) | 254)) {
            return "a link-local address (169.254.0.0/16, where cloud metadata services answer)";
        }
        if (a == ((100L << 24) | (100L << 16) | (100L << 8) | 200)) {
            return "the Alibaba Cloud metadata address";
        }
        if (a == ((192L << 24) | 192)) {
            return "the Oracle Cloud metadata address";
        }
        return null;
    }

    private static String v6Reason(String h) {
        int zone = h.indexOf('%');
        String literal = zone >= 0 ? h.substring(0, zone) : h;
        if (!V6_CHARS.matcher(literal).matches()) {
            return null;
        }
        byte[] b;
        try {
            // a literal: parsed, never looked up
            b = InetAddress.getByName(literal).getAddress();
        } catch (UnknownHostException e) {
            return null;
        }
        if (b.length == 4) {
            return v4Reason(toLong(b, 0));
        }
        if ((b[0] & 0xff) == 0xfe && (b[1] & 0xc0) == 0x80) {
            return "an IPv6 link-local address (fe80::/10)";
        }
        byte[] ec2 = {(byte) 0xfd, 0, 0x0e, (byte) 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54};
        if (java.util.Arrays.equals(b, ec2)) {
            return "the AWS IPv6 metadata address";
        }
        boolean nat64 = (b[0] & 0xff) == 0x00 && (b[1] & 0xff) == 0x64 && (b[2] & 0xff) == 0xff
                && (b[3] & 0xff) == 0x9b && zeros(b, 4, 12);
        boolean mapped = zeros(b, 0, 10) && (b[10] & 0xff) == 0xff && (b[11] & 0xff) == 0xff;
        boolean compatible = zeros(b, 0, 12);
        if (nat64 || mapped || compatible) {
            return v4Reason(toLong(b, 12));
        }
        return null;
    }

    private static boolean zeros(byte[] b, int from, int to) {
        for (int i = from; i < to; i++) {
            if (b[i] != 0) {
                return false;
            }
        }
        return true;
    }

    private static long toLong(byte[] b, int off) {
        return ((b[off] & 0xffL) << 24) | ((b[off + 1] & 0xffL) << 16) | ((b[off + 2] & 0xffL) << 8) | (b[off + 3] & 0xffL);
    }

    /** inet_aton: 1 to 4 parts, each decimal, octal (leading 0) or hex (0x); the last part fills the rest. */
    static Long ipv4(String h) {
        if (h.isEmpty() || !V4_CHARS.matcher(h).matches()) {
            return null;
        }
        String[] parts = h.split("\\.", -1);
        if (parts.length > 4) {
            return null;
        }
        long[] v = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            String p = parts[i];
            try {
                if (p.startsWith("0x")) {
                    v[i] = p.length() == 2 ? 0 : Long.parseLong(p.substring(2), 16);
                } else if (p.length() > 1 && p.startsWith("0")) {
                    v[i] = Long.parseLong(p.substring(1), 8);
                } else {
                    v[i] = Long.parseLong(p);
                }
            } catch (NumberFormatException e) {
                return null;
            }
        }
        long out = 0;
        for (int i = 0; i < v.length - 1; i++) {
            if (v[i] > 255) {
                return null;
            }
            out |= v[i] << (8 * (3 - i));
        }
        long last = v[v.length - 1];
        if (last >= (1L << (8 * (4 - (v.length - 1))))) {
            return null;
        }
        return out | last;
    }
}
