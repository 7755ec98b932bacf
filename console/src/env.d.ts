// Style sheets imported for their effect: Vite turns them into files of the build.
declare module '*.css';
