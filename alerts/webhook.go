package alerts

import "context"

// newWebhookSink returns a sink that POSTs each alert to url, one alert a
// request, as the JSON object of AppendJSON (Content-Type
// application/json). One alert a request keeps receivers simple (no
// array to unwrap) and a rejected alert from taking others with it.
func newWebhookSink(name, url string, ho httpOptions, o queueOptions) (Sink, error) {
	h, err := newHTTPClient(ho)
	if err != nil {
		return nil, err
	}
	o.maxBatch = 1
	return newQueueSink(name, &webhookTarget{url: url, h: h}, o), nil
}

type webhookTarget struct {
	url string
	h   *httpClient
	buf []byte
}

func (t *webhookTarget) deliver(ctx context.Context, batch []Alert) (int, error) {
	t.buf = AppendJSON(t.buf[:0], &batch[0])
	if err := t.h.post(ctx, t.url, t.buf); err != nil {
		return 0, err
	}
	return 1, nil
}

func (t *webhookTarget) close() error {
	t.h.close()
	return nil
}
