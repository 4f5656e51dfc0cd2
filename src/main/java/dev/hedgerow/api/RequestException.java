package dev.hedgerow.api;

/**
 * A request the gateway refuses, carrying the error to send and, once the request named one, the alias it asked
 * for (so the blocked audit event lands under that alias).
 */
public final class RequestException extends RuntimeException {
    private final ApiError error;
    private final String alias;

    public RequestException(ApiError error) {
        this(error, null);
    }

    private RequestException(ApiError error, String alias) {
        super(error.message(), null, false, false);
        this.error = error;
        this.alias = alias;
    }

    public ApiError error() {
        return error;
    }

    /** The alias the refused request named, or null when it was refused before naming one. */
    public String alias() {
        return alias;
    }

    /** The same refusal, of a request that named {@code alias}. */
    public RequestException withAlias(String alias) {
        return new RequestException(error, alias);
    }
}
