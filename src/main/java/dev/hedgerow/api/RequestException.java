package dev.hedgerow.api;

/** A request the gateway refuses, carrying the error to send. */
public final class RequestException extends RuntimeException {
    private final ApiError error;

    public RequestException(ApiError error) {
        super(error.message(), null, false, false);
        this.error = error;
    }

    public ApiError error() {
        return error;
    }
}
