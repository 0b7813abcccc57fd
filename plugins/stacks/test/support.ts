/** Compose files the tests share. */

/**
 * Web, a database-like service with a health check (ready once its marker file exists), a worker; a named volume,
 * a network, interpolated variables and depends_on service_healthy. Stopped containers die at once (1 s grace).
 */
export const threeServices = `services:
  web:
    image: \${IMAGE}
    command: httpd -f -p 8080 -h /www
    ports: ["127.0.0.1:\${WEB_PORT}:8080"]
    environment:
      GREETING: \${GREETING:-hi}
    depends_on:
      db:
        condition: service_healthy
    networks: [back]
    restart: unless-stopped
    stop_grace_period: 1s
  db:
    image: \${IMAGE}
    command: ["sh", "-c", "sleep 1; echo ready > /data/ready; exec sleep 3600"]
    volumes: ["dbdata:/data"]
    healthcheck:
      test: ["CMD", "cat", "/data/ready"]
      interval: 500ms
      timeout: 2s
      retries: 60
    deploy:
      resources:
        limits: { memory: 64m, cpus: "0.5" }
    networks: [back]
    stop_grace_period: 1s
  worker:
    image: \${IMAGE}
    command: sh -c 'echo worker for $$HOSTNAME; exec sleep 3600'
    depends_on: [db]
    networks: [back]
    stop_grace_period: 1s
networks:
  back: {}
volumes:
  dbdata: {}
`
