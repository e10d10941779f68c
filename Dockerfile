# Build and run switchboard; used by docker-compose.yml.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /switchboard ./cmd/switchboard

FROM gcr.io/distroless/static-debian12
COPY --from=build /switchboard /switchboard
EXPOSE 8080
ENTRYPOINT ["/switchboard"]
CMD ["serve"]
